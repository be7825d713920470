import { randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import { SignedLinks } from '../../src/domain/media/signed-links.ts';
import { UPLOAD_URL_KEY_LABEL, UPLOAD_URL_MAX_SECONDS, uploadUrlSignedPath } from '../../src/uploads/upload-urls/upload-url.service.ts';
import { connectPg } from '../helpers/database.ts';
import { expectError, startTestServer, TEST_AUTH_SECRET, type TestServer } from '../helpers/server.ts';
import { DRIVERS_OF_THIS_PASS, driverSettings, settledObjects, type Driver } from '../helpers/storage.ts';
import { memberWithKey } from '../helpers/team-admin.ts';
import { createUploadUrl, heldRawUpload, postFormToUrl, postToUrl, withParam } from '../helpers/upload-urls.ts';
import { expectNothingCounted, KiB, MiB, pngLike, teamStorageState } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';
import { startWebhookReceiver } from '../helpers/webhook-receiver.ts';
import { UUID_V7 } from '../helpers/uuid-v7.ts';

// Upload URLs (docs/upload-urls.md) against a real server, PostgreSQL, and both storage drivers.
const settings = { RATE_LIMIT_POINTS: 100_000, AUTOMATION_ALLOW_PRIVATE_TARGETS: true, UPLOAD_URL_TEAM_RATE_LIMIT_POINTS: 100_000 };
const servers: Record<Driver, TestServer> = {
  fs: await startTestServer(t, { settings: { ...settings, ...driverSettings('fs') } }),
  s3: await startTestServer(t, { settings: { ...settings, ...driverSettings('s3') } }),
};
const server = servers.fs;
const db = await connectPg(server.databaseUrl);
t.teardown(() => db.end());

const urlsPath = (teamId: string) => `/v1/cdn/media/${teamId}/upload-urls`;

/** What the team stores, and the storage itself: nothing after a refusal. */
async function expectNothingStored(t: Test, target: TestServer, driver: Driver, teamId: string, before: { files: number; usedStorage: number }) {
  await expectNothingCounted(t, target, teamId, before);
  const stored = await settledObjects(driver, target.dataDir, teamId, before.files);
  t.equal(stored.objects.length, before.files, 'no object stored');
  t.equal(stored.inProgress.length, 0, 'no write left in progress');
}

async function urlState(urlId: string, target: TestServer = server) {
  const client = target === server ? db : await connectPg(target.databaseUrl);
  const { rows } = await client.query<{ state: string; media_id: string | null }>('select state, media_id from upload_url where id = $1', [urlId]);
  if (client !== db) await client.end();
  return rows[0];
}
const urlIdOf = (url: string) => new URL(url).pathname.split('/').pop()!;

t.test('creating: 201 with the signed URL, its expiry and the effective maximum size', async (t) => {
  const team = await server.createTeam('Create');
  const before = Date.now();
  const response = await server.media('POST', urlsPath(team.teamId), team.key, { body: { maxSizeBytes: 5000, expiresInSeconds: 120 } });
  t.equal(response.status, 201);
  const { url, method, fields, expiresAt, maxSizeBytes } = response.body;
  t.same({ method, fields, maxSizeBytes }, { method: 'POST', fields: { name: 'file' }, maxSizeBytes: 5000 });
  t.match(url, new RegExp(`^${server.baseUrl}/v1/cdn/media/${team.teamId}/upload-urls/[0-9a-f-]{36}\\?expires=\\d+&signature=[A-Za-z0-9_-]{43}$`), 'PUBLIC_URL origin, signed');
  const expires = Date.parse(expiresAt);
  t.ok(expires >= Math.floor(before / 1000) * 1000 + 119_000 && expires <= Date.now() + 120_000, 'expires after expiresInSeconds');
  t.equal(new URL(url).searchParams.get('expires'), String(expires / 1000), 'the URL carries the same expiry');
  t.equal(response.headers.get('cache-control'), 'no-store');

  const defaults = await createUploadUrl(server, team.teamId, team.key);
  t.equal(Date.parse(defaults.expiresAt) - Date.now() > 890_000, true, 'default 900 s');
  t.equal(defaults.maxSizeBytes, 10_000_000, 'no size asked: the free plan\'s maxMediaFileSize');
  const huge = await createUploadUrl(server, team.teamId, team.key, { maxSizeBytes: 10 ** 12 });
  t.equal(huge.maxSizeBytes, 10_000_000, 'never more than the plan allows');
  const enterprise = await server.createTeam('CreateBig', 'enterprise');
  await server.admin('PATCH', `/v1/admin/teams/${enterprise.teamId}/limits`, { maxMediaFileSize: 300_000_000 });
  t.equal((await createUploadUrl(server, enterprise.teamId, enterprise.key, { maxSizeBytes: 10 ** 12 })).maxSizeBytes, 260_000_000, 'nor more than the route takes');
});

t.test('creating needs team.media.upload; a media:upload key may; another team\'s key may not', async (t) => {
  const team = await server.createTeam('Perms');
  const other = await server.createTeam('PermsOther');
  const viewer = await memberWithKey(server, team.teamId, 'viewer', ['team.media.view']);
  expectError(t, await server.media('POST', urlsPath(team.teamId), viewer.key, { body: {} }), 403, 'error.forbidden');
  const uploader = await memberWithKey(server, team.teamId, 'uploader', ['team.media.upload'], { scopes: ['media:upload'] });
  t.equal((await server.media('POST', urlsPath(team.teamId), uploader.key, { body: {} })).status, 201, 'media:upload key');
  const member = await memberWithKey(server, team.teamId, 'member', ['team.media.upload']);
  t.equal((await server.media('POST', urlsPath(team.teamId), member.key, { body: {} })).status, 201, 'member with the permission');
  expectError(t, await server.media('POST', urlsPath(team.teamId), other.key, { body: {} }), 401, 'error.unauthorized');
  expectError(t, await server.request('POST', urlsPath(team.teamId), { body: {} }), 401, 'error.unauthorized');
  const { rows } = await db.query('select count(*)::int as n from upload_url where team_id = $1', [team.teamId]);
  t.equal(rows[0].n, 2, 'only the allowed creations made a row');
});

t.test('creating validates the options as the upload routes do (400), and folderId must exist (404)', async (t) => {
  const team = await server.createTeam('Validate');
  const folder = (await server.media('POST', `/v1/cdn/media/${team.teamId}/folders`, team.key, { body: { name: 'shots' } })).body;
  const cases: [Record<string, unknown>, string][] = [
    [{ tags: ['UPPER'] }, 'tags.0'],
    [{ tags: 'a,b c' }, 'tags'],
    [{ tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, 'tags'],
    [{ folder: 'a', folderId: folder.id }, 'folder'],
    [{ folder: 'a/b/c/d/e/f' }, 'folder'],
    [{ folder: 'a/../b' }, 'folder'],
    [{ fileName: '' }, 'fileName'],
    [{ fileName: 'bad\u0007name.png' }, 'fileName'],
    [{ fileName: 'x'.repeat(256) }, 'fileName'],
    [{ folderId: 'not-a-uuid' }, 'folderId'],
    [{ public: 'yes' }, 'public'],
    [{ maxSizeBytes: 0 }, 'maxSizeBytes'],
    [{ maxSizeBytes: 1.5 }, 'maxSizeBytes'],
    [{ contentTypes: [] }, 'contentTypes'],
    [{ contentTypes: ['image'] }, 'contentTypes.0'],
    [{ contentTypes: ['*/*'] }, 'contentTypes.0'],
    [{ expiresInSeconds: 59 }, 'expiresInSeconds'],
    [{ expiresInSeconds: UPLOAD_URL_MAX_SECONDS + 1 }, 'expiresInSeconds'],
    [{ surprise: true }, 'surprise'],
  ];
  for (const [body, field] of cases) {
    const response = await server.media('POST', urlsPath(team.teamId), team.key, { body });
    t.equal(response.status, 400, JSON.stringify(body).slice(0, 60));
    t.equal(response.body.value, field, `names ${field}`);
  }
  expectError(t, await server.media('POST', urlsPath(team.teamId), team.key, { body: '[1]' }), 400, 'error.badRequest');
  expectError(t, await server.media('POST', urlsPath(team.teamId), team.key, { body: '{' }), 400, 'error.badRequest');
  expectError(t, await server.media('POST', urlsPath(team.teamId), team.key, { body: { folderId: randomUUID() } }), 404, 'error.notFound');
  // A fixed name of a blocked type: refused here (415), not made into a URL every use of which is refused.
  for (const fileName of ['page.html', 'setup.exe', 'logo.svg', 'run.sh', 'PAGE.HTM']) {
    const response = await server.media('POST', urlsPath(team.teamId), team.key, { body: { fileName } });
    expectError(t, response, 415, 'error.unsupportedMediaType');
  }
  const { rows } = await db.query('select count(*)::int as n from upload_url where team_id = $1', [team.teamId]);
  t.equal(rows[0].n, 0, 'no row for a refused creation');
});

for (const driver of DRIVERS_OF_THIS_PASS) {
  const target = servers[driver];

  t.test(`${driver}: a multipart upload without a key lands with the URL's options; the URL is then used`, async (t) => {
    const team = await target.createTeam(`Multi-${driver}`);
    const created = await createUploadUrl(target, team.teamId, team.key, { folder: 'shots/2026', tags: ['map:dust', 'srv'], public: false, fileName: 'screenshot.png' });
    const content = pngLike(300 * KiB);
    // The uploader's own options lose to the URL's: query and form fields alike.
    const hostile = `${created.url}&folder=elsewhere&tags=pwned&public=true`;
    const response = await postFormToUrl(withParam(hostile, 'fileName', 'evil.png'), [{ content, fileName: 'mine.png', contentType: 'image/png' }], { tags: 'pwned', public: 'true', folder: 'x' });
    t.equal(response.status, 201);
    t.match(response.body, { fileName: 'screenshot.png', tags: ['map:dust', 'srv'], public: false, publicUrl: null, size: content.length, contentType: 'image/png' });
    const folders = (await target.media('GET', `/v1/cdn/media/${team.teamId}/folders`, team.key)).body.folders;
    t.same(folders.map((folder: { name: string }) => folder.name).sort(), ['2026', 'shots'], 'the URL\'s folder path, nothing else');
    const link = (await target.media('GET', `/v1/cdn/media/${team.teamId}/${response.body.id}`, team.key)).body.url;
    t.same(Buffer.from(await (await fetch(link)).arrayBuffer()), content, 'the bytes are the file');
    const { rows } = await db.query(driver === 'fs' ? 'select uploaded_by_key_id from media_file where id = $1' : 'select 1', driver === 'fs' ? [response.body.id] : []);
    if (driver === 'fs') t.equal(rows[0].uploaded_by_key_id, team.keyId, 'recorded as uploaded by the key that made the URL');

    const before = await teamStorageState(target.databaseUrl, team.teamId);
    expectError(t, await postFormToUrl(created.url, [{ content: pngLike(100), fileName: 'again.png' }]), 410, 'error.media.uploadUrlUsed');
    await expectNothingStored(t, target, driver, team.teamId, before);
  });

  t.test(`${driver}: a raw body upload; the uploader names the file when the URL does not`, async (t) => {
    const team = await target.createTeam(`Raw-${driver}`);
    const created = await createUploadUrl(target, team.teamId, team.key, { contentTypes: ['image/*'] });
    const content = pngLike(2 * MiB);
    const response = await postToUrl(withParam(created.url, 'fileName', 'shot.png'), content, { 'content-type': 'image/png' });
    t.equal(response.status, 201);
    t.match(response.body, { fileName: 'shot.png', contentType: 'image/png', size: content.length, public: true, tags: [], folderId: null });
    t.equal((await target.media('GET', `/v1/cdn/media/${team.teamId}`, team.key)).body.media.length, 1, 'listed');
    t.same(Buffer.from(await (await fetch(response.body.publicUrl)).arrayBuffer()), content, 'the bytes are the file');
    t.equal((await teamStorageState(target.databaseUrl, team.teamId)).usedStorage, content.length, 'counted once');
    t.equal((await settledObjects(driver, target.dataDir, team.teamId, 1)).objects.length, 1);
  });

  t.test(`${driver}: 413 past maxSizeBytes by Content-Length and while streaming; nothing left; the URL stays usable`, async (t) => {
    const team = await target.createTeam(`Size-${driver}`);
    const created = await createUploadUrl(target, team.teamId, team.key, { maxSizeBytes: 600 * KiB, fileName: 'big.png' });
    const before = await teamStorageState(target.databaseUrl, team.teamId);
    expectError(t, await postToUrl(created.url, pngLike(600 * KiB + 1), { 'content-type': 'image/png' }), 413, 'error.payloadTooLarge');
    expectError(t, await postToUrl(created.url, pngLike(MiB), { 'content-type': 'image/png' }, { chunked: true }), 413, 'error.payloadTooLarge');
    const form = await postFormToUrl(created.url, [{ content: pngLike(MiB), fileName: 'big.png' }], {}, { chunked: true });
    expectError(t, form, 413, 'error.payloadTooLarge');
    t.equal(form.body.value, 600 * KiB, 'names the URL\'s limit');
    await expectNothingStored(t, target, driver, team.teamId, before);
    t.equal((await urlState(urlIdOf(created.url), target))!.state, 'open', 'released: the holder may retry');
    t.equal((await postToUrl(created.url, pngLike(600 * KiB), { 'content-type': 'image/png' })).status, 201, 'exactly the limit fits');
  });

  t.test(`${driver}: 415 for a type outside contentTypes (by header, at the part, by content) and for a blocked type`, async (t) => {
    const team = await target.createTeam(`Type-${driver}`);
    const created = await createUploadUrl(target, team.teamId, team.key, { contentTypes: ['image/png', 'image/jpeg'], fileName: 'shot.png' });
    const before = await teamStorageState(target.databaseUrl, team.teamId);
    const text = Buffer.from('just some text\n'.repeat(20_000));
    expectError(t, await postToUrl(created.url, text, { 'content-type': 'text/plain' }), 415, 'error.unsupportedMediaType');
    expectError(t, await postToUrl(created.url, pngLike(1000), { 'content-type': 'image/gif' }), 415, 'error.unsupportedMediaType');
    expectError(t, await postFormToUrl(created.url, [{ content: pngLike(1000), contentType: 'image/webp' }]), 415, 'error.unsupportedMediaType');
    // Declared as nothing in particular: the content tells, as soon as its first bytes are in.
    const sniffed = await postToUrl(created.url, text, { 'content-type': 'application/octet-stream' }, { chunked: true });
    expectError(t, sniffed, 415, 'error.unsupportedMediaType');
    const open = await createUploadUrl(target, team.teamId, team.key);
    expectError(t, await postToUrl(withParam(open.url, 'fileName', 'page.html'), Buffer.from('<html></html>'), { 'content-type': 'text/html' }), 415, 'error.unsupportedMediaType');
    expectError(t, await postFormToUrl(open.url, [{ content: Buffer.from('<!doctype html><script>x</script>'), fileName: 'page.txt', contentType: 'text/plain' }]), 415, 'error.unsupportedMediaType');
    await expectNothingStored(t, target, driver, team.teamId, before);
    t.equal((await postFormToUrl(created.url, [{ content: pngLike(5000), contentType: 'application/octet-stream' }])).status, 201, 'a PNG passes');
  });

  t.test(`${driver}: 402 past the team's limits, by Content-Length and while streaming; nothing left`, async (t) => {
    const team = await target.createTeam(`Limit-${driver}`);
    await target.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxMediaFileSize: 512 * KiB });
    const created = await createUploadUrl(target, team.teamId, team.key, { fileName: 'shot.png' });
    t.equal(created.maxSizeBytes, 512 * KiB, 'the team\'s limit is the URL\'s effective maximum');
    const before = await teamStorageState(target.databaseUrl, team.teamId);
    expectError(t, await postToUrl(created.url, pngLike(MiB), { 'content-type': 'image/png' }), 402, 'error.teamLimits.maxMediaFileSize');
    expectError(t, await postToUrl(created.url, pngLike(MiB), { 'content-type': 'image/png' }, { chunked: true }), 402, 'error.teamLimits.maxMediaFileSize');
    await target.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxMediaFileSize: 10 * MiB, maxTeamStorage: 256 });
    expectError(t, await postFormToUrl(created.url, [{ content: pngLike(400 * KiB) }], {}, { chunked: true }), 402, 'error.teamLimits.maxTeamStorage');
    await expectNothingStored(t, target, driver, team.teamId, before);
  });
}

t.test('a raw body needs a name (400 before any byte) and a valid one', async (t) => {
  const team = await server.createTeam('Names');
  const created = await createUploadUrl(server, team.teamId, team.key);
  const before = await teamStorageState(server.databaseUrl, team.teamId);
  expectError(t, await postToUrl(created.url, pngLike(1000), { 'content-type': 'image/png' }), 400, 'error.badRequest');
  expectError(t, await postToUrl(withParam(created.url, 'fileName', 'a\u0001b.png'), pngLike(1000), { 'content-type': 'image/png' }), 400, 'error.badRequest');
  expectError(t, await postToUrl(created.url, Buffer.from('x'), { 'content-type': 'multipart/form-data' }), 400, 'error.badRequest');
  await expectNothingCounted(t, server, team.teamId, before);
  t.equal((await urlState(urlIdOf(created.url)))!.state, 'open', 'still usable');
});

t.test('altered, expired and unknown URLs: 403 or 410 in the error body, nothing stored', async (t) => {
  const team = await server.createTeam('Altered');
  const created = await createUploadUrl(server, team.teamId, team.key, { fileName: 'x.png' });
  const url = new URL(created.url);
  const signature = url.searchParams.get('signature')!;
  const expires = Number(url.searchParams.get('expires'));
  const urlId = urlIdOf(created.url);
  const before = await teamStorageState(server.databaseUrl, team.teamId);
  const png = pngLike(1000);
  const altered = [
    withParam(created.url, 'signature', `${signature[0] === 'A' ? 'B' : 'A'}${signature.slice(1)}`),
    withParam(created.url, 'expires', String(expires + 60)),
    created.url.replace(urlId, randomUUID()),
    created.url.replace(`/${team.teamId}/`, `/${randomUUID()}/`),
    `${url.origin}${url.pathname}`,
    withParam(created.url, 'signature', 'short'),
  ];
  for (const target of altered) expectError(t, await postToUrl(target, png, { 'content-type': 'image/png' }), 403, 'error.media.uploadUrlInvalid');

  // Signed by the same key with an expiry in the past: a URL that has expired.
  const signer = new SignedLinks({ secret: TEST_AUTH_SECRET, label: UPLOAD_URL_KEY_LABEL, ttlSeconds: UPLOAD_URL_MAX_SECONDS });
  const past = Math.floor(Date.now() / 1000) - 1;
  const expired = `${url.origin}${url.pathname}${signer.signUntil(uploadUrlSignedPath(team.teamId, urlId), past)}`;
  expectError(t, await postToUrl(expired, png, { 'content-type': 'image/png' }), 410, 'error.media.uploadUrlExpired');
  // A signed-link signature (another key) does not pass for an upload URL.
  const linkSigner = new SignedLinks({ secret: TEST_AUTH_SECRET, ttlSeconds: UPLOAD_URL_MAX_SECONDS });
  const crossed = `${url.origin}${url.pathname}${linkSigner.signUntil(uploadUrlSignedPath(team.teamId, urlId), expires)}`;
  expectError(t, await postToUrl(crossed, png, { 'content-type': 'image/png' }), 403, 'error.media.uploadUrlInvalid');
  // The row's own expiry holds too (checked by PostgreSQL's clock when the URL is claimed).
  await db.query(`update upload_url set expires_at = now() - interval '1 second' where id = $1`, [urlId]);
  expectError(t, await postToUrl(created.url, png, { 'content-type': 'image/png' }), 410, 'error.media.uploadUrlExpired');
  await expectNothingCounted(t, server, team.teamId, before);

  // A URL whose key was deleted is gone with it: refused as its maker no longer may upload (test/integration/upload-maker-access.test.ts).
  const member = await memberWithKey(server, team.teamId, 'temp', ['team.media.upload']);
  const orphan = await createUploadUrl(server, team.teamId, member.key, { fileName: 'y.png' });
  t.equal((await server.admin('DELETE', `/v1/admin/api-keys/${member.keyId}`)).status < 300, true, 'key deleted');
  expectError(t, await postToUrl(orphan.url, png, { 'content-type': 'image/png' }), 403, 'error.media.uploadUrlRevoked');
  await expectNothingCounted(t, server, team.teamId, before);
});

t.test('an upload running on a URL makes a second use wait its turn: 409, then 410 once the first landed', async (t) => {
  const team = await server.createTeam('InUse');
  const created = await createUploadUrl(server, team.teamId, team.key, { fileName: 'held.png' });
  const content = pngLike(200 * KiB);
  const first = heldRawUpload(created.url, content);
  t.ok(await eventually(async () => (await urlState(urlIdOf(created.url)))!.state === 'claimed'), 'claimed by the first upload');
  expectError(t, await postToUrl(created.url, pngLike(100), { 'content-type': 'image/png' }), 409, 'error.media.uploadUrlInUse');
  first.finish();
  const answer = await first.response;
  t.equal(answer.status, 201);
  t.same(await urlState(urlIdOf(created.url)), { state: 'used', media_id: answer.body.id }, 'used by that file');
  t.match(answer.body.id, UUID_V7, 'its media id is time-ordered (UUIDv7)');
  expectError(t, await postToUrl(created.url, pngLike(100), { 'content-type': 'image/png' }), 410, 'error.media.uploadUrlUsed');
  t.equal((await teamStorageState(server.databaseUrl, team.teamId)).files, 1);
});

t.test('a client that leaves mid-upload releases the URL', async (t) => {
  const team = await server.createTeam('Leaves');
  const created = await createUploadUrl(server, team.teamId, team.key, { fileName: 'gone.png' });
  const first = heldRawUpload(created.url, pngLike(200 * KiB));
  t.ok(await eventually(async () => (await urlState(urlIdOf(created.url)))!.state === 'claimed'));
  first.request.destroy();
  t.ok(await eventually(async () => (await urlState(urlIdOf(created.url)))!.state === 'open'), 'open again');
  await expectNothingCounted(t, server, team.teamId, { files: 0, usedStorage: 0 });
  t.equal((await postToUrl(created.url, pngLike(1000), { 'content-type': 'image/png' })).status, 201, 'and usable');
});

t.test('the team\'s automations fire for an upload through a URL', async (t) => {
  const receiver = await startWebhookReceiver(t);
  const team = await server.createTeam('Hooks');
  const automation = await server.media('POST', `/v1/teams/${team.teamId}/automations`, team.key, { body: { name: 'hook', url: `${receiver.url}/hook` } });
  t.equal(automation.status, 201);
  const created = await createUploadUrl(server, team.teamId, team.key, { tags: ['round:1'] });
  const upload = await postFormToUrl(created.url, [{ content: pngLike(2000), fileName: 'shot.png' }]);
  t.equal(upload.status, 201);
  t.ok(await eventually(() => receiver.requests.length === 1), 'delivered');
  t.equal(receiver.requests[0]!.headers['x-media-event'], 'media.uploaded');
  t.match(receiver.requests[0]!.json, { data: { media: { id: upload.body.id, tags: ['round:1'], fileName: 'shot.png' } } });
});

t.test('metrics: upload URLs created, used and refused by reason', async (t) => {
  const team = await server.createTeam('Metrics');
  const created = await createUploadUrl(server, team.teamId, team.key, { fileName: 'm.png' });
  await postToUrl(created.url, pngLike(100), { 'content-type': 'image/png' });
  await postToUrl(created.url, pngLike(100), { 'content-type': 'image/png' });
  await postToUrl(withParam(created.url, 'signature', 'x'.repeat(43)), pngLike(100), { 'content-type': 'image/png' });
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const value = (line: string) => Number(new RegExp(`^${line.replace(/[{}"]/g, '\\$&')} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
  t.ok(value('media_upload_urls_created_total') >= 1, 'created');
  t.ok(value('media_upload_urls_used_total') >= 1, 'used');
  t.ok(value('media_upload_urls_refused_total{reason="used"}') >= 1, 'refused: used');
  t.ok(value('media_upload_urls_refused_total{reason="invalid"}') >= 1, 'refused: invalid');
});

t.test('CORS: the use route answers a preflight and an upload from another origin', async (t) => {
  const team = await server.createTeam('Cors');
  const created = await createUploadUrl(server, team.teamId, team.key, { fileName: 'c.png' });
  const preflight = await fetch(created.url, {
    method: 'OPTIONS',
    headers: { origin: 'https://cfx-nui-screenshot-basic', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
  });
  t.equal(preflight.status, 204);
  t.equal(preflight.headers.get('access-control-allow-origin'), '*');
  t.match(preflight.headers.get('access-control-allow-headers'), /Content-Type/);
  const upload = await fetch(created.url, { method: 'POST', headers: { origin: 'https://cfx-nui-screenshot-basic', 'content-type': 'image/png' }, body: pngLike(500) });
  t.equal(upload.status, 201);
  t.equal(upload.headers.get('access-control-allow-origin'), '*');
});

t.test('rate limits: per URL (429 with Retry-After), and per team', async (t) => {
  const limited = await startTestServer(t, { settings: { UPLOAD_URL_RATE_LIMIT_POINTS: 3, UPLOAD_URL_TEAM_RATE_LIMIT_POINTS: 4, RATE_LIMIT_POINTS: 1000 } });
  const team = await limited.createTeam('Hammered');
  const created = await createUploadUrl(limited, team.teamId, team.key, { fileName: 'r.png' });
  const statuses = [];
  for (let i = 0; i < 4; i++) statuses.push((await postToUrl(created.url, pngLike(100), { 'content-type': 'image/png' })).status);
  t.same(statuses, [201, 410, 410, 429], 'the fourth use of one URL within the window');
  const refused = await postToUrl(created.url, pngLike(100), { 'content-type': 'image/png' });
  expectError(t, refused, 429, 'error.tooManyRequests');
  t.ok(Number(refused.headers.get('retry-after')) >= 1, 'Retry-After');

  const others = [];
  for (let i = 0; i < 2; i++) others.push(await createUploadUrl(limited, team.teamId, team.key, { fileName: `o${i}.png` }));
  // Four team points: three went to the first URL (its own 429s reach no further), one is left.
  t.equal((await postToUrl(others[0]!.url, pngLike(100), { 'content-type': 'image/png' })).status, 201);
  const teamRefused = await postToUrl(others[1]!.url, pngLike(100), { 'content-type': 'image/png' });
  expectError(t, teamRefused, 429, 'error.tooManyRequests');
  t.equal((await teamStorageState(limited.databaseUrl, team.teamId)).files, 2, 'only the admitted uses stored');
  const other = await limited.createTeam('Calm');
  const calm = await createUploadUrl(limited, other.teamId, other.key, { fileName: 'c.png' });
  t.equal((await postToUrl(calm.url, pngLike(100), { 'content-type': 'image/png' })).status, 201, 'another team is not affected');
});
