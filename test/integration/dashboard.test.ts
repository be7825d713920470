import t, { type Test } from 'tap';
import { launchChromiumOrSkip } from '../helpers/browser.ts';
import { join, PASSWORD, signUp, sql } from '../helpers/accounts.ts';
import { expectAccessible, SCREENSHOT_DIRECTORY, screenshot, signInWithKey } from '../helpers/dashboard.ts';
import { startFakeDiscord } from '../helpers/fake-discord.ts';
import { startTestServer } from '../helpers/server.ts';
import { pngLike, uploadMultipart } from '../helpers/uploads.ts';

// The web dashboard at /app in a real Chromium (Debian's chromium, driven by playwright-core),
// against the real service: how it is served (headers, compression, CSP), signing in with a
// password, a team key and Discord, and the media screens. Screenshots go to SCREENSHOT_DIRECTORY.

const browser = await launchChromiumOrSkip(t, 'dashboard browser test');
const discord = await startFakeDiscord(t);
const server = await startTestServer(t, {
  settings: {
    RATE_LIMIT_POINTS: 100_000,
    OAUTH_DISCORD_CLIENT_ID: discord.clientId,
    OAUTH_DISCORD_CLIENT_SECRET: discord.clientSecret,
    OAUTH_DISCORD_API_URL: discord.apiUrl,
    OAUTH_DISCORD_AUTHORIZE_URL: discord.authorizeUrl,
  },
});
t.comment(`screenshots: ${SCREENSHOT_DIRECTORY}`);

async function newPage(t: Test) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  t.teardown(() => context.close());
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.baseUrl });
  const page = await context.newPage();
  const dialogs: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  const pageErrors: string[] = [];
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  page.on('console', (message) => message.type() === 'error' && !/Failed to load resource/.test(message.text()) && pageErrors.push(message.text()));
  return { context, page, dialogs, pageErrors };
}

t.test('served at /app: one page for every view, compressed, revalidated, with a strict policy', async (t) => {
  const toApp = await fetch(`${server.baseUrl}/`, { headers: { accept: 'text/html,application/xhtml+xml' }, redirect: 'manual' });
  t.equal(toApp.status, 302, 'a browser opening / is sent to the dashboard');
  t.equal(toApp.headers.get('location'), '/app');
  const api = await server.request('GET', '/');
  t.equal(api.status, 200, 'API clients keep the links');
  t.equal(api.body.dashboard, '/app');

  const page = await fetch(`${server.baseUrl}/app`, { headers: { 'accept-encoding': 'br, gzip' } });
  t.equal(page.status, 200);
  t.equal(page.headers.get('content-encoding'), 'br');
  t.match(page.headers.get('content-type'), /^text\/html/);
  const csp = page.headers.get('content-security-policy') ?? '';
  t.match(csp, /default-src 'self'/);
  t.match(csp, /script-src 'self' 'sha256-[A-Za-z0-9+/=]+'(;|$)/, 'scripts: own files and the import map by its hash; no unsafe-inline, no eval');
  t.notMatch(csp, /unsafe-inline|unsafe-eval/);
  t.match(csp, /frame-ancestors 'none'/);
  t.match(csp, /img-src 'self' http:\/\/127\.0\.0\.1:\d+ blob: data:/);
  t.equal(page.headers.get('x-frame-options'), 'DENY');
  t.equal(page.headers.get('x-content-type-options'), 'nosniff');
  t.equal(page.headers.get('referrer-policy'), 'no-referrer');
  t.equal(page.headers.get('cache-control'), 'no-cache');
  const html = await page.text();
  t.match(html, /<script type="importmap">\{"imports":\{"preact":"\/app\/vendor\/preact\.mjs"/);
  t.notMatch(html.replace(/<script type="importmap">[^<]*<\/script>/, ''), /<script(?![^>]*\bsrc=)[^>]*>/, 'no other inline script');

  const etag = page.headers.get('etag')!;
  const again = await fetch(`${server.baseUrl}/app`, { headers: { 'accept-encoding': 'br, gzip', 'if-none-match': etag } });
  t.equal(again.status, 304, 'revalidated with the ETag');
  const gzip = await fetch(`${server.baseUrl}/app/media/some-file`, { headers: { 'accept-encoding': 'gzip' } });
  t.equal(gzip.headers.get('content-encoding'), 'gzip', 'gzip when brotli is not accepted');
  t.equal(await gzip.text(), html, 'a view\'s address answers the same page');
  const plain = await fetch(`${server.baseUrl}/app/upload`, { headers: { 'accept-encoding': 'identity' } });
  t.equal(plain.headers.get('content-encoding'), null);
  t.not(plain.headers.get('etag'), etag, 'each encoding its own ETag');

  const script = await fetch(`${server.baseUrl}/app/assets/main.js`);
  t.match(script.headers.get('content-type'), /^text\/javascript/);
  const css = await fetch(`${server.baseUrl}/app/assets/dashboard.css`);
  t.match(css.headers.get('content-type'), /^text\/css/);
  const library = await fetch(`${server.baseUrl}/app/vendor/preact.mjs`);
  t.equal(library.status, 200);
  t.match(library.headers.get('content-type'), /^text\/javascript/);
  t.equal((await fetch(`${server.baseUrl}/app/assets/nothing.js`)).status, 404);
  t.equal((await fetch(`${server.baseUrl}/app/assets/..%2Fpackage.json`)).status, 404);
  t.equal((await fetch(`${server.baseUrl}/app/vendor/package.json`)).status, 404);
  const cors = await fetch(`${server.baseUrl}/v1/openapi.json`, { headers: { origin: 'https://cfx-nui-screenshot-basic' } });
  t.equal(cors.headers.get('access-control-allow-origin'), '*', 'CORS of the API unchanged');

  // The first load as served: the page, its style sheet and every module it preloads, brotli.
  const preloaded = [...html.matchAll(/rel="modulepreload" href="([^"]+)"/g)].map((match) => match[1]!);
  let transferred = 0;
  let uncompressed = 0;
  for (const path of ['/app', '/app/assets/dashboard.css', ...preloaded]) {
    const answer = await fetch(`${server.baseUrl}${path}`, { headers: { 'accept-encoding': 'br' } });
    t.equal(answer.status, 200, path);
    const body = Buffer.from(await answer.arrayBuffer());
    transferred += Number(answer.headers.get('content-length'));
    uncompressed += body.length; // fetch decodes brotli itself
  }
  t.comment(`first load: ${preloaded.length + 2} files, ${transferred} bytes transferred (brotli), ${uncompressed} bytes uncompressed`);
  t.ok(transferred < 60_000, 'the first load stays small');
});

t.test('password sign-in: a user in two teams picks one, and signing out ends the session', async (t) => {
  const user = await signUp(server);
  const alpha = await server.createTeam('Alpha');
  const bravo = await server.createTeam('Bravo');
  await join(server, alpha, user.userId, ['team.media.view']);
  await join(server, bravo, user.userId, ['team.media.view', 'team.media.upload', 'team.media.edit', 'team.media.delete']);
  const { page, dialogs, pageErrors } = await newPage(t);

  await page.goto(`${server.baseUrl}/`);
  t.equal(new URL(page.url()).pathname, '/app', 'the service address leads to the dashboard');
  await page.getByRole('heading', { name: 'Sign in to the media dashboard' }).waitFor();
  t.ok(await page.getByRole('button', { name: 'Sign in with Discord' }).isVisible(), 'Discord is offered: it is configured');
  t.equal(await page.getByRole('button', { name: 'Sign in with Google' }).count(), 0, 'Google is not');
  await expectAccessible(t, page, 'sign-in');
  await screenshot(page, '01-sign-in');

  await page.getByLabel('Email or username').fill(user.username);
  await page.getByLabel('Password').fill('not the password');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('alert').filter({ hasText: 'check what you typed' }).waitFor();
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();

  await page.getByRole('heading', { name: 'Choose a team' }).waitFor();
  t.same(await page.locator('.team-choice-name').allTextContents(), ['Alpha', 'Bravo']);
  await expectAccessible(t, page, 'team picker');
  await screenshot(page, '02-team-picker');
  const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem('media-dashboard.credential') ?? '{}').token as string);
  t.match(token, /^tss_/, 'the session token lives in this tab\'s sessionStorage');
  t.same(await page.context().cookies(), [], 'and in no cookie');

  await page.getByRole('button', { name: /Bravo/ }).click();
  await page.getByRole('heading', { level: 1, name: 'Media' }).waitFor();
  t.equal(await page.locator('.team-name').textContent(), `Bravo · ${(await server.media('GET', `/v1/teams/${bravo.teamId}/me`, token)).body.member.name}`);
  await page.reload();
  await page.getByRole('heading', { level: 1, name: 'Media' }).waitFor();
  t.pass('a reload keeps the tab signed in');

  await page.getByRole('link', { name: 'Switch team' }).click();
  await page.getByRole('button', { name: /Alpha/ }).click();
  await page.getByRole('heading', { level: 1, name: 'Media' }).waitFor();
  t.equal(await page.getByRole('link', { name: 'Upload' }).count(), 0, 'a member who may only view sees no Upload view');
  t.equal(await page.getByRole('button', { name: 'Select all shown' }).count(), 0, 'nor bulk actions');

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { name: 'Sign in to the media dashboard' }).waitFor();
  t.equal((await server.media('GET', '/v1/users/me', token)).status, 401, 'the session is ended on the service');
  t.equal(await page.evaluate(() => sessionStorage.getItem('media-dashboard.credential')), null, 'and forgotten by the tab');
  t.same(dialogs, []);
  t.same(pageErrors, []);
});

t.test('Discord sign-in: the provider round comes back to the dashboard with the session in the fragment', async (t) => {
  const { page, pageErrors } = await newPage(t);
  await page.route(`${discord.authorizeUrl}**`, async (route) => {
    const back = await discord.authorize(route.request().url(), { as: { id: '80351110224678912', username: 'nelly', email: 'nelly@example.com', verified: true } });
    await route.fulfill({ status: 302, headers: { location: back.href } });
  });
  await page.goto(`${server.baseUrl}/app`);
  await page.getByRole('button', { name: 'Sign in with Discord' }).click();
  await page.getByRole('heading', { name: 'Choose a team' }).waitFor();
  t.equal(new URL(page.url()).hash, '', 'the token is taken out of the address');
  await page.getByText('You are not a member of any team yet').waitFor();
  t.same(pageErrors, []);
});
