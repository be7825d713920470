import t from 'tap';
import { chromiumMissing, launchChromium } from '../helpers/browser.ts';
import { startTestServer } from '../helpers/server.ts';

// `/docs/` is how people type it too: the same page, its scripts, styles and document found from there.
for (const address of ['/docs', '/docs/']) {
  t.test(`GET ${address} renders the API description in headless Chromium`, { skip: chromiumMissing() ?? false }, async (t) => {
    const server = await startTestServer(t);
    const browser = await launchChromium(t);
    const page = await browser.newPage();

    const problems: string[] = [];
    const outside: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('requestfailed', (request) => problems.push(`request failed: ${request.url()} ${request.failure()?.errorText ?? ''}`));
    page.on('request', (request) => {
      if (!request.url().startsWith(server.baseUrl) && !request.url().startsWith('data:')) outside.push(request.url());
    });
    page.on('response', (response) => {
      if (response.status() >= 400) problems.push(`${response.status()} for ${response.url()}`);
    });

    const response = await page.goto(`${server.baseUrl}${address}`, { waitUntil: 'load' });
    t.equal(response?.status(), 200);
    // Swagger UI fetches the document, then renders one block per operation: with 239 of them and the
    // suite's other files on the two cores, a cold first render has taken more than 30 s.
    const upload = page.locator('.opblock-summary-path', { hasText: '/v1/cdn/media/{teamId}/upload/file' });
    await upload.first().waitFor({ timeout: 90_000 });
    t.ok(await upload.count(), 'the multipart upload route is shown');
    t.ok(await page.locator('.opblock-summary-path', { hasText: /^\/v1\/cdn\/media\/\{teamId\}\/upload$/ }).count(), 'the JSON upload route is shown');
    t.match(await page.locator('.info .title').innerText(), /Media upload service/);
    t.match(await page.locator('.info .title').innerText(), /1\.0\.0/, 'the version');
    t.ok(await page.locator('.auth-wrapper .authorize').count(), 'the security schemes make an Authorize button');

    // Opening the upload operation renders its parameters and responses from the document.
    await upload.first().click();
    await page.locator('.opblock-body .responses-table').first().waitFor({ timeout: 10_000 });
    t.match(await page.locator('.opblock.is-open').first().innerText(), /201[\s\S]*413[\s\S]*415/, 'its answers are listed');

    t.same(problems, [], 'no console errors, page errors or failed requests (CSP violations are console errors)');
    t.same(outside, [], 'nothing is loaded from outside the service');
  });
}
