import t, { type Test } from 'tap';
import type { Page } from 'playwright-core';
import { verifySignature } from '../../src/domain/automations/signature.ts';
import { join, signUp } from '../helpers/accounts.ts';
import { launchChromiumOrSkip } from '../helpers/browser.ts';
import { expectAccessible, SCREENSHOT_DIRECTORY, screenshot, signInWithKey, newDashboardPage, clipboardText } from '../helpers/dashboard.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { heldUpload, pngLike, uploadMultipart } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';
import { startWebhookReceiver } from '../helpers/webhook-receiver.ts';

// The dashboard's team screens in a real Chromium against the real service: automations (create,
// test message to a real receiver, the delivery log), upload URLs (made, copied, used with plain
// fetch), the team log with its filters and pages, every upload refusal produced by the service
// itself (402, 413, 429, 503) shown in words, and who uploaded a file in its details.

const browser = await launchChromiumOrSkip(t, 'dashboard team screens browser test');
const server = await startTestServer(t, {
  settings: {
    RATE_LIMIT_POINTS: 100_000,
    AUTOMATION_ALLOW_PRIVATE_TARGETS: true,
    AUTOMATION_DISPATCH_INTERVAL_MS: 200,
    AUTOMATION_MAX_ATTEMPTS: 2,
    AUTOMATION_BACKOFF_BASE_MS: 20,
    AUTOMATION_BACKOFF_MAX_MS: 40,
  },
});
t.comment(`screenshots: ${SCREENSHOT_DIRECTORY}`);
const team = await server.createTeam('Ops');
const MARKUP = '<img src=x onerror=alert(1)>';
const hookName = `${MARKUP} match bot`;

const newPage = (t: Test, origin = server.baseUrl) => newDashboardPage(t, browser, origin);


async function memberKey(target: TestServer, teamId: string, name: string, permissions: string[]) {
  const member = await target.admin('POST', `/v1/admin/teams/${teamId}/members`, { name, permissions });
  if (member.status !== 201) throw new Error(`member creation failed: ${JSON.stringify(member.body)}`);
  const key = await target.admin('POST', `/v1/admin/teams/${teamId}/api-keys`, { teamMemberId: member.body.id, description: name });
  return { teamId, key: key.body.key as string, keyId: key.body.id as string, memberId: member.body.id as string };
}

t.test('automations: create a webhook to a real receiver, send a test, follow it in the delivery log', async (t) => {
  const receiver = await startWebhookReceiver(t);
  const { page, dialogs, pageErrors } = await newPage(t);
  await signInWithKey(page, server.baseUrl, team);
  await page.getByRole('link', { name: 'Automations' }).click();
  await page.getByRole('heading', { level: 1, name: 'Automations' }).waitFor();
  await page.getByText('No automation yet.').waitFor();

  await page.getByLabel('Name', { exact: true }).fill(hookName);
  await page.getByLabel('Address (URL)', { exact: true }).fill(`${receiver.url}/hooks/media`);
  await page.getByLabel('Only files with all these tags', { exact: true }).fill('crash, Round:3');
  await page.getByRole('button', { name: 'Create automation' }).click();
  t.match(await page.getByRole('alert').textContent(), /^The request was refused: Invalid tag .* Correct it and try again\.$/, 'a refused field in words');
  await page.getByLabel('Only files with all these tags', { exact: true }).fill('crash, round:3');
  await page.getByRole('button', { name: 'Create automation' }).click();
  const secret = await page.getByLabel('Signing secret', { exact: true }).inputValue();
  t.match(secret, /^whsec_/, 'the signing secret is shown once');
  await page.getByRole('button', { name: 'Copy secret' }).click();
  await page.getByText('Secret copied').waitFor();
  t.equal(await clipboardText(page), secret);
  await page.getByRole('heading', { level: 3, name: hookName }).waitFor();
  t.match(await page.locator('.automation').textContent(), /tags crash, round:3/, 'the tags as the API stored them');

  // A test message, delivered to the receiver and shown in the log.
  await page.getByRole('button', { name: `Send a test to ${hookName}` }).click();
  await page.getByRole('heading', { level: 2, name: `Deliveries of ${hookName}` }).waitFor();
  t.match(new URL(page.url()).pathname, /^\/app\/automations\/[0-9a-f-]{36}$/, 'the delivery log has its address');
  const delivered = page.locator('.delivery-log tbody tr', { hasText: 'Delivered' });
  await delivered.waitFor();
  t.match(await delivered.textContent(), /Test message.*Delivered.*1.*HTTP 200/, 'event, status, attempts and the receiver\'s answer');
  t.equal(receiver.requests.length, 1);
  t.equal(receiver.requests[0]!.json.kind, 'automation.test');
  t.equal(receiver.requests[0]!.json.data.automation.name, hookName);
  t.ok(verifySignature(secret, receiver.requests[0]!.body, String(receiver.requests[0]!.headers['x-media-signature'])), 'signed with the secret shown');
  await expectAccessible(t, page, 'automations');
  await screenshot(page, '21-automations');

  // A receiver that fails: the delivery fails with its answer, then a retry gets through.
  receiver.behave(() => 500);
  await page.getByRole('button', { name: `Send a test to ${hookName}` }).click();
  const failed = page.locator('.delivery-log tbody tr', { hasText: 'Failed' });
  await failed.waitFor();
  t.match(await failed.textContent(), /Failed.*2.*HTTP 500/, 'failed after its 2 attempts, with the status');
  await page.getByLabel('Status', { exact: true }).selectOption('failed');
  await page.locator('.delivery-log .muted', { hasText: '1 delivery' }).waitFor();
  t.pass('the status filter narrows the log');
  receiver.behave(() => 200);
  await page.getByRole('button', { name: 'Retry this delivery' }).click();
  await page.getByText('The delivery is queued again').waitFor();
  t.ok(await eventually(() => receiver.requests.length === 4, 20_000), 'two failed attempts and the retried one reached the receiver');
  // The receiver answers before the service records the delivery: wait for the record, as the filtered
  // list (which shows no delivery on its way) does not refresh itself.
  const deliveries = `${server.baseUrl}/v1/teams/${team.teamId}/automations/${new URL(page.url()).pathname.split('/').pop()}/deliveries?status=delivered`;
  t.ok(await eventually(async () => {
    const answer = await fetch(deliveries, { headers: { Authorization: `Bearer ${team.key}` } });
    return ((await answer.json()) as { data: unknown[] }).data.length === 2;
  }, 20_000), 'the service records the retried delivery as delivered');
  await page.getByLabel('Status', { exact: true }).selectOption({ label: 'Delivered' });
  await page.locator('.delivery-log .muted', { hasText: '2 deliveries' }).waitFor({ timeout: 20_000 });
  t.pass('the retried delivery is listed as delivered');

  // Disabled: no test can be sent.
  await page.getByRole('button', { name: `Disable ${hookName}` }).click();
  await page.locator('.badge', { hasText: 'Disabled' }).waitFor();
  t.ok(await page.getByRole('button', { name: `Send a test to ${hookName}` }).isDisabled(), 'a disabled automation sends no test');
  await page.setViewportSize({ width: 390, height: 844 });
  await expectAccessible(t, page, 'automations, narrow');
  await screenshot(page, '22-automations-narrow');
  t.equal(await page.locator('img[src="x"]').count(), 0, 'the name is text');
  t.same(dialogs, []);
  t.same(pageErrors, []);
});

t.test('upload URLs: made with limits, copied, used with plain fetch once; its limits hold', async (t) => {
  const { page, pageErrors } = await newPage(t);
  await signInWithKey(page, server.baseUrl, team);
  await page.getByRole('link', { name: 'Upload URLs' }).click();
  await page.getByRole('heading', { level: 1, name: 'Upload URLs' }).waitFor();
  await page.getByLabel('Valid for', { exact: true }).selectOption({ label: '5 minutes' });
  await page.getByLabel('Largest file (MB)', { exact: true }).fill('0.01');
  await page.getByLabel('Allowed types', { exact: true }).fill('image/*');
  await page.getByLabel('Or a folder path', { exact: true }).fill('fivem/shots');
  await page.getByLabel('Tags', { exact: true }).fill('fivem, player:12');
  await page.getByLabel('Visibility', { exact: true }).selectOption('private');
  const before = Date.now();
  await page.getByRole('button', { name: 'Create and copy the URL' }).click();
  await page.getByText('Upload URL copied').waitFor();
  const url = await clipboardText(page);
  t.match(url, new RegExp(`^${server.baseUrl}/v1/cdn/media/${team.teamId}/upload-urls/[0-9a-f-]{36}\\?expires=\\d+&signature=`), 'the URL is on the clipboard');
  t.equal(await page.getByLabel('Upload URL 1', { exact: true }).inputValue(), url, 'and in the list of this page');
  const expires = Number(new URL(url).searchParams.get('expires')) * 1000;
  t.ok(expires > before + 240_000 && expires <= Date.now() + 300_000, 'valid for the 5 minutes chosen');
  t.match(await page.locator('.made-url .muted').textContent(), /up to 10 KB · folder fivem\/shots · tags fivem, player:12 · private · types image\/\*/);
  await page.getByRole('button', { name: 'Copy upload URL 1' }).click();
  await page.getByText('Upload URL copied').waitFor();

  // The game client's side: plain fetch, no key.
  const tooLarge = new FormData();
  tooLarge.append('file', new Blob([pngLike(20_000)], { type: 'image/png' }), 'big.png');
  const refused = await fetch(url, { method: 'POST', body: tooLarge });
  t.equal(refused.status, 413, 'past the URL\'s largest file: 413, and the URL stays usable');
  const form = new FormData();
  form.append('file', new Blob([pngLike(3000)], { type: 'image/png' }), 'client-shot.png');
  const used = await fetch(url, { method: 'POST', body: form });
  t.equal(used.status, 201);
  const stored = (await used.json()) as { id: string; folderId: string; tags: string[]; public: boolean };
  t.match(stored, { tags: ['fivem', 'player:12'], public: false }, 'with the options fixed in the dashboard');
  const again = await fetch(url, { method: 'POST', body: form });
  t.equal(again.status, 410, 'a URL works once');
  const folders = await server.media('GET', `/v1/cdn/media/${team.teamId}/folders`, team.key);
  t.ok(folders.body.folders.some((folder: { id: string; name: string }) => folder.id === stored.folderId && folder.name === 'shots'), 'in the folder path given');

  // A refusal in words: a blocked name.
  await page.getByLabel('File name', { exact: true }).fill('page.html');
  await page.getByRole('button', { name: 'Create and copy the URL' }).click();
  t.match(await page.getByRole('alert').textContent(), /not accepted/, 'a 415 in words');
  await expectAccessible(t, page, 'upload URLs');
  await screenshot(page, '23-upload-urls');
  t.same(pageErrors, []);
});

t.test('team log: the actions above, narrowed by action, actor and dates, paged', async (t) => {
  const viewer = await memberKey(server, team.teamId, 'reader', ['team.logs.view']);
  // 30 more changes, so the log has a second page (25 a page).
  const automations = await server.media('GET', `/v1/teams/${team.teamId}/automations`, team.key);
  const automationId = automations.body.data[0].id;
  for (let round = 0; round < 30; round++) {
    t.equal((await server.media('PATCH', `/v1/teams/${team.teamId}/automations/${automationId}`, team.key, { body: { name: `hook ${round}` } })).status, 200);
  }
  const logs = `/v1/teams/${team.teamId}/logs`;
  const total = (await server.media('GET', logs, team.key)).body.count as number;
  const owner = (await server.media('GET', `/v1/teams/${team.teamId}/me`, team.key)).body.member as { id: string; name: string };
  const byOwner = (await server.media('GET', `${logs}?teamMemberId=${owner.id}`, team.key)).body.count as number;
  t.ok(total > 25 && byOwner > 25 && byOwner <= total, `${total} entries, ${byOwner} of them by the owner's key`);
  const { page, pageErrors } = await newPage(t);
  await signInWithKey(page, server.baseUrl, team);
  await page.getByRole('link', { name: 'Team log' }).click();
  await page.getByRole('heading', { level: 1, name: 'Team log' }).waitFor();
  await page.locator('.result-count', { hasText: `${total} entries` }).waitFor();
  t.equal(await page.locator('.team-log tbody tr').count(), 25, 'one page of 25');
  t.match(await page.locator('.team-log tbody tr').first().textContent(), /Automation updated.*name: hook 29/, 'newest first, with the details');
  await page.getByRole('button', { name: 'Next page' }).click();
  await page.getByText('Page 2 of 2').waitFor();
  const lastPage = await page.locator('.team-log tbody').textContent();
  t.match(lastPage, /Automation created/, 'the creation is on the last page');
  t.ok(lastPage!.includes(`name: ${hookName}`), 'the automation\'s name as text');

  await page.getByLabel('Action', { exact: true }).selectOption('AUTOMATION_CREATED');
  await page.locator('.result-count', { hasText: '1 entry' }).waitFor();
  t.equal(await page.locator('.team-log tbody tr').count(), 1, 'the action filter narrows the log, from its first page');
  await expectAccessible(t, page, 'team log');
  await screenshot(page, '24-team-log');
  await page.getByLabel('Action', { exact: true }).selectOption('');

  const options = await page.getByLabel('Who', { exact: true }).locator('option').allTextContents();
  t.ok(options.length >= 2, `the actors to filter by (${options.join(', ')})`);
  await page.getByLabel('Who', { exact: true }).selectOption({ label: owner.name });
  await page.locator('.result-count', { hasText: `${byOwner} entries` }).waitFor();
  t.pass('the actor filter: the changes made with the owner\'s key');

  const today = await page.evaluate(() => new Date().toLocaleDateString('sv'));
  const tomorrow = await page.evaluate(() => new Date(Date.now() + 86_400_000).toLocaleDateString('sv'));
  await page.getByLabel('From', { exact: true }).fill(today);
  await page.getByLabel('To', { exact: true }).fill(today);
  await page.locator('.result-count', { hasText: `${byOwner} entries` }).waitFor();
  t.pass('a date range of today keeps them');
  await page.getByLabel('To', { exact: true }).fill('');
  await page.getByLabel('From', { exact: true }).fill(tomorrow);
  await page.getByText('No entry matches these filters.').waitFor();
  t.pass('a date range from tomorrow finds nothing');
  t.same(pageErrors, []);

  // A member who may read the log but not manage automations nor upload sees only the log.
  const reader = await newPage(t);
  await reader.page.goto(`${server.baseUrl}/app`);
  await reader.page.getByLabel('API key', { exact: true }).fill(viewer.key);
  await reader.page.getByRole('button', { name: 'Open the team' }).click();
  await reader.page.getByRole('link', { name: 'Team log' }).waitFor();
  t.equal(await reader.page.getByRole('link', { name: 'Automations' }).count(), 0, 'no Automations without team.automations.manage');
  t.equal(await reader.page.getByRole('link', { name: 'Upload URLs' }).count(), 0, 'no Upload URLs without team.media.upload');
});

t.test('details: who uploaded a file, a key by its description or a team member', async (t) => {
  const fleet = await server.media('POST', `/v1/teams/${team.teamId}/api-keys`, team.key, { body: { description: `fleet ${MARKUP} server` } });
  t.equal((await uploadMultipart(server, team.teamId, fleet.body.key, { content: pngLike(2500), fileName: 'by-fleet.png' })).status, 201);
  const user = await signUp(server);
  await join(server, team, user.userId, ['team.media.view', 'team.media.upload']);
  t.equal((await uploadMultipart(server, team.teamId, user.token, { content: pngLike(2600), fileName: 'by-member.png' })).status, 201);
  const { page, dialogs, pageErrors } = await newPage(t);
  await signInWithKey(page, server.baseUrl, team);
  await page.getByRole('radio', { name: 'List' }).check();
  await page.getByRole('button', { name: 'by-fleet.png' }).click();
  await page.locator('.uploaded-by', { hasText: 'API key' }).waitFor();
  t.equal(await page.locator('.uploaded-by').textContent(), `API key fleet ${MARKUP} server`, 'the key\'s description, as text');
  await expectAccessible(t, page, 'details with the uploader');
  await screenshot(page, '25-details-uploader');
  await page.getByRole('button', { name: 'by-member.png' }).click();
  await page.locator('.uploaded-by', { hasText: 'A team member' }).waitFor();
  t.pass('a signed-in member\'s upload');
  t.equal(await page.locator('img[src="x"]').count(), 0);
  t.same(dialogs, []);
  t.same(pageErrors, []);
});

t.test('upload refusals from the service itself, each in words with what to do: 402, 413, 429, 503', async (t) => {
  const limited = await startTestServer(t, {
    settings: { RATE_LIMIT_POINTS: 40, RATE_LIMIT_DURATION_SECONDS: 600, UPLOAD_CONCURRENCY: 1, UPLOAD_QUEUE_LIMIT: 1, UPLOAD_TEAM_MAX_SHARE: 1 },
  });
  const openUpload = async (who: { teamId: string; key: string }) => {
    const opened = await newPage(t, limited.baseUrl);
    await signInWithKey(opened.page, limited.baseUrl, who);
    await opened.page.getByRole('link', { name: 'Upload', exact: true }).click();
    await opened.page.getByRole('heading', { level: 1, name: 'Upload' }).waitFor();
    return opened;
  };
  const failedText = async (page: Page, index: number) => {
    const error = page.locator('.upload-item[data-status="failed"] .error').nth(index);
    await error.waitFor();
    return error.textContent();
  };

  // 402: a plan of 1,000 bytes per file, then a storage of 1 KiB; 413: past the service's 260 MB.
  const small = await limited.createTeam('Small');
  t.equal((await limited.admin('PATCH', `/v1/admin/teams/${small.teamId}/limits`, { maxMediaFileSize: 1000 })).status, 200);
  const { page, pageErrors } = await openUpload(small);
  await page.getByLabel('Choose files', { exact: true }).setInputFiles([{ name: 'large-for-plan.png', mimeType: 'image/png', buffer: pngLike(2000) }]);
  t.match(await failedText(page, 0), /larger than the team's plan allows \(1 KB per file\)\. Upload a smaller file, or ask the operator for a larger plan/, '402 file size');
  t.equal((await limited.admin('PATCH', `/v1/admin/teams/${small.teamId}/limits`, { maxMediaFileSize: null, maxTeamStorage: 1 })).status, 200);
  await page.getByLabel('Choose files', { exact: true }).setInputFiles([{ name: 'storage-full.png', mimeType: 'image/png', buffer: pngLike(2000) }]);
  t.match(await failedText(page, 1), /team storage is full\. Delete files you no longer need/, '402 storage');
  const huge = await page.evaluateHandle(() => {
    const browser = globalThis as any;
    const transfer = new browser.DataTransfer();
    transfer.items.add(new browser.File([new Uint8Array(261_000_000)], 'match-recording.mp4', { type: 'video/mp4' }));
    return transfer;
  });
  await page.dispatchEvent('.drop-zone', 'drop', { dataTransfer: huge });
  t.match(await failedText(page, 2), /larger than the service accepts \(260 MB per file\)\. Compress it \(zip\) or split it/, '413 through the resumable route');
  t.equal((await limited.media('GET', `/v1/cdn/media/${small.teamId}`, small.key)).body.media.length, 0, 'nothing was stored');
  await expectAccessible(t, page, 'upload refusals');
  await screenshot(page, '26-upload-refusals');

  // 503: one upload runs and one waits (the admission limits are 1 and 1), so the next is turned away.
  const busy = await limited.createTeam('Busy');
  const busyPage = await openUpload(busy);
  const gate = limited.app.services.gate;
  const running = heldUpload(limited, busy.teamId, busy.key, Buffer.alloc(64 * 1024, 7));
  t.ok(await eventually(() => gate.running === 1), 'one upload runs');
  const waiting = heldUpload(limited, busy.teamId, busy.key, Buffer.alloc(64 * 1024, 8));
  waiting.finish();
  t.ok(await eventually(() => gate.waiting === 1), 'one upload waits');
  await busyPage.page.getByLabel('Choose files', { exact: true }).setInputFiles([{ name: 'turned-away.png', mimeType: 'image/png', buffer: pngLike(1500) }]);
  t.match(await failedText(busyPage.page, 0), /busy with other uploads\. It is not your fault: retry the file\. Try again in 5 s\./, '503 with Retry-After');
  running.finish();
  t.equal((await running.response).status, 201);
  t.equal((await waiting.response).status, 201);
  await busyPage.page.getByRole('button', { name: 'Retry turned-away.png' }).click();
  await busyPage.page.locator('.upload-status[data-status="done"]').waitFor();
  t.pass('the retry lands once the service has room');
  await screenshot(busyPage.page, '27-upload-busy-retried');

  // 429: the key's budget (40 requests in 10 minutes) spent by the test, then the upload is refused.
  const hasty = await limited.createTeam('Hasty');
  const hastyPage = await openUpload(hasty);
  let spent = false;
  for (let request = 0; request < 60 && !spent; request++) {
    spent = (await limited.media('GET', `/v1/cdn/media/${hasty.teamId}/folders`, hasty.key)).status === 429;
  }
  t.ok(spent, 'the key\'s budget is spent');
  await hastyPage.page.getByLabel('Choose files', { exact: true }).setInputFiles([{ name: 'too-soon.png', mimeType: 'image/png', buffer: pngLike(1500) }]);
  t.match(await failedText(hastyPage.page, 0), /Too many requests in a short time\. Wait, then retry the file\. Try again in \d+ s\./, '429 with Retry-After');
  await expectAccessible(t, hastyPage.page, 'upload refused 429');
  await screenshot(hastyPage.page, '28-upload-rate-limited');
  t.same([...pageErrors, ...busyPage.pageErrors, ...hastyPage.pageErrors], []);
});
