import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join as joinPath } from 'node:path';
import t, { type Test } from 'tap';
import { launchChromiumOrSkip } from '../helpers/browser.ts';
import { join, PASSWORD, signUp, sql } from '../helpers/accounts.ts';
import { expectAccessible, SCREENSHOT_DIRECTORY, screenshot, signInWithKey, newDashboardPage } from '../helpers/dashboard.ts';
import { startFakeDiscord } from '../helpers/fake-discord.ts';
import { startTestServer } from '../helpers/server.ts';
import { MiB, pngLike, teamStorageState, uploadMultipart } from '../helpers/uploads.ts';

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

const newPage = (t: Test) => newDashboardPage(t, browser, server.baseUrl);

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

  await page.getByLabel('Email or username', { exact: true }).fill(user.username);
  await page.getByLabel('Password', { exact: true }).fill('not the password');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('alert').filter({ hasText: 'check what you typed' }).waitFor();
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();

  await page.getByRole('heading', { name: 'Choose a team' }).waitFor();
  await page.locator('.team-choice-name').nth(1).waitFor(); // the heading shows while the teams still load
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

t.test('team key: upload by chooser and by drop, grid and filters, details and links, bulk delete, names as text only', async (t) => {
  const team = await server.createTeam('Charlie');
  const base = `/v1/cdn/media/${team.teamId}`;
  // Markup where users type names: a folder, and a file uploaded through the API.
  const folderName = '<img src=x onerror=alert(2)>logs';
  const folder = await server.media('POST', `${base}/folders`, team.key, { body: { name: folderName } });
  t.equal(folder.status, 201);
  const markupFile = '<img src=x onerror=alert(1)>.png';
  t.equal((await uploadMultipart(server, team.teamId, team.key, { content: pngLike(2048), fileName: markupFile, contentType: 'image/png' }, '?tags=shots')).status, 201);
  const { page, dialogs, pageErrors } = await newPage(t);
  await signInWithKey(page, server.baseUrl, team);
  t.match(await page.locator('.team-name').textContent(), /^Charlie/, 'the key\'s team is open');

  // Upload view: options first, then the file chooser and a drop.
  await page.getByRole('link', { name: 'Upload', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Upload' }).waitFor();
  await page.getByLabel('Folder', { exact: true }).selectOption({ label: folderName });
  await page.getByLabel('Tags', { exact: true }).fill('Round:3');
  await page.getByRole('button', { name: 'Add tag' }).click();
  await page.getByLabel('Visibility', { exact: true }).selectOption('public');
  await page.getByLabel('Choose files', { exact: true }).setInputFiles([
    { name: 'server.log', mimeType: 'text/plain', buffer: Buffer.from('12:00:01 INFO start\n12:00:02 WARN tick took 61 ms\n<script>alert(3)</script>\n') },
    { name: 'shot.png', mimeType: 'image/png', buffer: pngLike(4096) },
  ]);
  await page.locator('.upload-status[data-status="done"]').nth(1).waitFor();
  const dataTransfer = await page.evaluateHandle(() => {
    const browser = globalThis as any;
    const transfer = new browser.DataTransfer();
    transfer.items.add(new browser.File(['dropped notes\n'], 'dropped.txt', { type: 'text/plain' }));
    return transfer;
  });
  await page.dispatchEvent('.drop-zone', 'drop', { dataTransfer });
  await page.locator('.upload-status[data-status="done"]').nth(2).waitFor();
  await page.getByLabel('Choose files', { exact: true }).setInputFiles([{ name: 'page.html', mimeType: 'text/html', buffer: Buffer.from('<!doctype html><html><body>hi</body></html>') }]);
  await page.locator('.upload-item[data-status="failed"] .error').waitFor();
  t.match(await page.locator('.upload-item[data-status="failed"] .error').textContent(), /not accepted.*archive/, 'a 415 in words, with what to do');
  await expectAccessible(t, page, 'upload');
  await screenshot(page, '04-upload');
  const listed = await server.media('GET', `${base}?folderId=${folder.body.id}`, team.key);
  t.same(listed.body.media.map((file: { fileName: string }) => file.fileName).sort(), ['dropped.txt', 'server.log', 'shot.png']);
  t.ok(listed.body.media.every((file: { tags: string[]; public: boolean }) => file.tags.includes('round:3') && file.public), 'with the options chosen before');

  // Grid and filters.
  await page.getByRole('link', { name: 'Media' }).click();
  await page.locator('.media-grid .tile').nth(3).waitFor();
  t.equal(await page.locator('.media-grid .tile').count(), 4);
  t.equal(await page.locator('.tile-name', { hasText: markupFile }).count(), 1, 'the markup file name is shown as text');
  // The folders are fetched apart from the grid: wait for them, then count.
  await page.locator('.folder-name', { hasText: folderName }).first().waitFor();
  t.equal(await page.locator('.folder-name', { hasText: folderName }).count(), 1, 'so is the folder name');
  await page.locator('.tile-open').first().focus();
  await page.keyboard.press('ArrowRight');
  t.equal(await page.evaluate(() => (globalThis as any).document.activeElement.textContent as string), (await page.locator('.tile-open').nth(1).textContent())!, 'arrow keys move between tiles');
  await page.keyboard.press('End');
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { level: 2, name: markupFile }).waitFor();
  t.pass('Enter opens a file\'s details');
  await page.keyboard.press('Escape');
  await page.locator('.details').waitFor({ state: 'detached' });
  t.equal(await page.evaluate(() => (globalThis as any).document.activeElement.textContent as string), (await page.locator('.tile-open').last().textContent())!,
    'closing the details gives the focus back to the file');
  await expectAccessible(t, page, 'media grid');
  await screenshot(page, '05-media-grid');
  await page.emulateMedia({ colorScheme: 'dark' });
  await expectAccessible(t, page, 'media grid, dark');
  await screenshot(page, '05-media-grid-dark');
  await page.emulateMedia({ colorScheme: 'light' });
  await page.getByLabel('Type', { exact: true }).selectOption('image');
  await page.locator('.result-count', { hasText: '2 files' }).waitFor();
  await page.getByLabel('Type', { exact: true }).selectOption('all');
  await page.getByLabel('Search by name', { exact: true }).fill('server');
  await page.locator('.result-count', { hasText: '1 file' }).waitFor();
  await page.getByLabel('Search by name', { exact: true }).fill('');
  await page.locator('.result-count', { hasText: '4 files' }).waitFor();
  await page.getByLabel('Filter by tag', { exact: true }).fill('shots');
  await page.getByRole('button', { name: 'Filter', exact: true }).click();
  await page.locator('.result-count', { hasText: '1 file' }).waitFor();
  t.equal(await page.locator('.tile-name').textContent(), markupFile, 'tag chips filter');
  await page.getByRole('button', { name: 'Remove tag shots' }).click();
  await page.getByRole('button', { name: folderName }).click();
  await page.locator('.result-count', { hasText: '3 files' }).waitFor();
  await page.getByRole('radio', { name: 'List' }).check();
  await page.locator('.media-list tbody tr').nth(2).waitFor();
  await expectAccessible(t, page, 'media list');
  await screenshot(page, '06-media-list');

  // Details: preview, copy link, private and a signed link, rename.
  await page.getByRole('button', { name: 'server.log' }).click();
  await page.getByRole('heading', { level: 2, name: 'server.log' }).waitFor();
  await page.locator('.text-preview pre').waitFor();
  t.match(await page.locator('.text-preview pre').textContent(), /WARN tick took 61 ms\n<script>alert\(3\)<\/script>/, 'the log\'s last lines, as text');
  await page.getByRole('button', { name: 'Copy link' }).click();
  await page.getByText('Link copied').waitFor();
  const publicLink = await page.evaluate(() => (globalThis as any).navigator.clipboard.readText() as Promise<string>);
  t.match(publicLink, new RegExp(`^${server.baseUrl}/media/team/${team.teamId}/[0-9a-f-]{36}\\.log$`), 'the public link is on the clipboard');
  await page.getByLabel('Public', { exact: true }).uncheck();
  await page.getByRole('button', { name: 'Copy signed link (1 hour)' }).click();
  await page.getByText('Signed link (valid for one hour) copied').waitFor();
  const signed = await page.evaluate(() => (globalThis as any).navigator.clipboard.readText() as Promise<string>);
  t.match(signed, /\?expires=\d+&signature=/, 'a private file gets a signed link');
  t.equal((await fetch(signed)).status, 200, 'which serves it');
  t.equal((await fetch(publicLink)).status, 404, 'while the public link stopped');
  await page.getByLabel('File name', { exact: true }).fill('round-3.log');
  await page.getByRole('button', { name: 'Rename file' }).click();
  await page.getByRole('heading', { level: 2, name: 'round-3.log' }).waitFor();
  await expectAccessible(t, page, 'details');
  await screenshot(page, '07-details');
  await page.setViewportSize({ width: 390, height: 844 });
  await screenshot(page, '08-details-narrow');
  await expectAccessible(t, page, 'details, narrow');
  await page.setViewportSize({ width: 1280, height: 860 });
  await page.getByLabel('File name', { exact: true }).focus();
  await page.keyboard.press('Escape');
  await page.locator('.details').waitFor({ state: 'detached' });

  // Bulk delete of everything in the folder.
  await page.getByRole('button', { name: 'Select all shown' }).click();
  await page.getByText('3 selected').waitFor();
  await page.getByRole('button', { name: 'Delete selected…' }).click();
  await page.getByRole('button', { name: 'Delete selected', exact: true }).click();
  await page.locator('.empty').waitFor();
  const left = await server.media('GET', base, team.key);
  t.same(left.body.media.map((file: { fileName: string }) => file.fileName), [markupFile], 'only the file outside the folder is left');

  // The folder tree: create, rename, move into another, delete (its content moves up).
  await page.getByRole('button', { name: 'All files' }).click();
  await page.getByText('Manage folders').click();
  await page.getByLabel('New folder at the top level', { exact: true }).fill('archive');
  await page.getByRole('button', { name: 'Create folder' }).click();
  await page.getByRole('button', { name: 'archive' }).click();
  await page.getByLabel('Rename archive', { exact: true }).fill('old');
  await page.getByRole('button', { name: 'Rename folder' }).click();
  await page.getByRole('button', { name: /^old/ }).waitFor();
  await page.getByLabel('Move old into', { exact: true }).selectOption({ label: folderName });
  await page.getByRole('button', { name: 'Move folder' }).click();
  await page.getByText('Folder moved').waitFor();
  const moved = await server.media('GET', `${base}/folders`, team.key);
  t.match(moved.body.folders.find((entry: { name: string }) => entry.name === 'old'), { parentId: folder.body.id, depth: 2 }, 'renamed and moved');
  await page.getByRole('button', { name: 'Delete old…' }).click();
  await page.getByRole('button', { name: 'Delete folder' }).click();
  await page.getByText(/^Folder deleted/).waitFor();
  t.equal((await server.media('GET', `${base}/folders`, team.key)).body.folders.length, 1, 'deleted');

  // Nothing the names held ever ran.
  await page.getByRole('button', { name: 'All files' }).click();
  await page.locator('.tile-name, .media-list button', { hasText: markupFile }).first().waitFor();
  t.equal(await page.locator('img[src="x"]').count(), 0, 'no element made from a name');
  t.same(dialogs, [], 'no alert ran');
  t.same(pageErrors, []);
});

t.test('usage: storage against the plan by kind, uploads and served traffic per day, the plan\'s limits', async (t) => {
  const team = await server.createTeam('Delta', 'enterprise');
  for (const size of [3000, 2000]) t.equal((await uploadMultipart(server, team.teamId, team.key, { content: pngLike(size), fileName: `shot-${size}.png` })).status, 201);
  const usage = (await server.media('GET', `/v1/cdn/media/${team.teamId}/usage?days=30`, team.key)).body;
  const { page, pageErrors } = await newPage(t);
  await signInWithKey(page, server.baseUrl, team);
  await page.getByRole('link', { name: 'Usage' }).click();
  await page.getByRole('heading', { level: 2, name: 'Storage' }).waitFor();
  t.match(await page.locator('.usage-total').first().textContent(), /^5 KB used of [\d.,]+ TB \(0\.0 %\)$/, 'storage used against the plan');
  t.equal(await page.locator('meter.usage-meter').getAttribute('value'), String(usage.storage.usedBytes), 'the meter holds the bytes used');
  const facts = await page.locator('section[aria-labelledby="usage-storage"] dl').textContent();
  t.match(facts, /Media5 KB/, 'by kind: media');
  t.match(facts, /Team files0 B/, 'team files');
  t.equal(await page.locator('section[aria-labelledby="usage-uploads"] svg rect').count(), 30, 'a bar per day, 30 days');
  t.match(await page.locator('section[aria-labelledby="usage-uploads"] .usage-total').textContent(), /^2 in the last 30 days$/);
  await page.getByText('Uploads per day').click();
  t.equal(await page.locator('section[aria-labelledby="usage-uploads"] tbody tr').first().locator('td').nth(1).textContent(), '2', 'today\'s uploads in the table, newest first');
  t.match(await page.locator('section[aria-labelledby="usage-limits"]').textContent(), /maxTeamStorage/, 'the plan\'s limits');
  await expectAccessible(t, page, 'usage');
  await screenshot(page, '10-usage');
  t.same(pageErrors, [], 'no script error');
});

t.test('a large file goes through tus, survives a page reload mid-upload and resumes where it stopped', async (t) => {
  const team = await server.createTeam('Delta', 'enterprise');
  const directory = await mkdtemp(joinPath(tmpdir(), 'dashboard-tus-'));
  t.teardown(() => rm(directory, { recursive: true, force: true }));
  // A file on disk keeps its modification time, which tus-js-client's fingerprint holds.
  const path = joinPath(directory, 'match-recording.png');
  const size = 12 * MiB;
  await writeFile(path, pngLike(size));
  const { page, pageErrors } = await newPage(t);
  const tusRequests: { method: string; offset: string | null }[] = [];
  page.on('request', (request) => {
    if (request.url().startsWith(`${server.baseUrl}/v1/cdn/media/${team.teamId}/tus`)) {
      tusRequests.push({ method: request.method(), offset: request.headers()['upload-offset'] ?? null });
    }
  });
  await signInWithKey(page, server.baseUrl, team);
  await page.getByRole('link', { name: 'Upload', exact: true }).click();

  // The second PATCH is held: the page is reloaded while the upload is half done.
  let secondPatch: () => void = () => {};
  const interrupted = new Promise<void>((resolve) => (secondPatch = resolve));
  let patches = 0;
  await page.route(`**/v1/cdn/media/${team.teamId}/tus/**`, async (route) => {
    if (route.request().method() === 'PATCH' && ++patches === 2) return secondPatch();
    await route.continue();
  });
  await page.getByLabel('Choose files', { exact: true }).setInputFiles(path);
  await page.getByText('resumable').waitFor();
  await interrupted;
  await page.unrouteAll({ behavior: 'ignoreErrors' });
  await page.reload();
  await page.getByRole('heading', { level: 1, name: 'Upload' }).waitFor();
  t.match(await teamStorageState(server.databaseUrl, team.teamId), { files: 0 }, 'not finished before the reload');

  // The same file chosen again after the reload: tus-js-client finds its upload and goes on.
  await page.getByLabel('Choose files', { exact: true }).setInputFiles(path);
  await page.locator('.upload-status[data-status="done"]').waitFor({ timeout: 30_000 });
  await screenshot(page, '09-upload-resumed');
  const created = tusRequests.filter((request) => request.method === 'POST');
  t.equal(created.length, 1, 'one upload created, none after the reload');
  const afterReload = tusRequests.slice(tusRequests.findIndex((request) => request.method === 'HEAD'));
  t.equal(afterReload[0]?.method, 'HEAD', 'the resumed upload asks where it stands');
  // Where it stood: at least the first chunk; part of the held one may have gone out as the page unloaded (tus keeps it).
  const resumedAt = Number(afterReload.find((request) => request.method === 'PATCH')?.offset);
  t.ok(resumedAt >= 4 * MiB && resumedAt < size, `and sends from there on, not from 0 (offset ${resumedAt})`);
  t.match(await teamStorageState(server.databaseUrl, team.teamId), { files: 1, usedStorage: size, reservedStorage: 0, reservations: 0 });
  t.same(pageErrors, []);
});

t.test('a large file through tus survives a dropped connection: tus-js-client asks where it stands and sends the rest', async (t) => {
  const team = await server.createTeam('Echo', 'enterprise');
  const { page, pageErrors } = await newPage(t);
  const tusRequests: { method: string; offset: string | null }[] = [];
  page.on('request', (request) => {
    if (request.url().startsWith(`${server.baseUrl}/v1/cdn/media/${team.teamId}/tus`)) {
      tusRequests.push({ method: request.method(), offset: request.headers()['upload-offset'] ?? null });
    }
  });
  await signInWithKey(page, server.baseUrl, team);
  await page.getByRole('link', { name: 'Upload', exact: true }).click();

  // The second PATCH loses its connection (a reset, as a dropped Wi-Fi gives); the later ones go through.
  let patches = 0;
  await page.route(`**/v1/cdn/media/${team.teamId}/tus/**`, async (route) => {
    if (route.request().method() === 'PATCH' && ++patches === 2) return route.abort('connectionreset');
    await route.continue();
  });
  const size = 10 * MiB;
  const directory = await mkdtemp(joinPath(tmpdir(), 'dashboard-tus-drop-'));
  t.teardown(() => rm(directory, { recursive: true, force: true }));
  const path = joinPath(directory, 'server-recording.png');
  await writeFile(path, pngLike(size));
  await page.getByLabel('Choose files', { exact: true }).setInputFiles(path);
  await page.locator('.upload-status[data-status="done"]').waitFor({ timeout: 60_000 });

  t.equal(tusRequests.filter((request) => request.method === 'POST').length, 1, 'one upload, not a new one after the drop');
  const afterDrop = tusRequests.slice(tusRequests.findIndex((request, i) => i > 0 && request.method === 'HEAD'));
  t.equal(afterDrop[0]?.method, 'HEAD', 'after the drop it asks where the upload stands');
  const resumedAt = Number(afterDrop.find((request) => request.method === 'PATCH')?.offset);
  t.ok(resumedAt >= 4 * MiB && resumedAt < size, `and goes on from there (offset ${resumedAt}), not from 0`);
  t.match(await teamStorageState(server.databaseUrl, team.teamId), { files: 1, usedStorage: size, reservedStorage: 0, reservations: 0 });
  t.same(pageErrors, []);
});
