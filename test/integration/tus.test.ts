import { createHash, randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { Upload } from 'tus-js-client';
import { connectPg } from '../helpers/database.ts';
import { subscribeToUploads } from '../helpers/outbox.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { storedObjects } from '../helpers/storage.ts';
import { expectNothingCounted, KiB, MiB, pngLike, teamStorageState, uploadMultipart } from '../helpers/uploads.ts';
import { cuttingProxy, sha256, tusMetadata, tusRequest, tusUpload } from '../helpers/tus.ts';
import { UUID_V7 } from '../helpers/uuid-v7.ts';

// Resumable uploads (tus 1.0.0) on the fs driver, with the real client (tus-js-client).

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

const tusPath = (teamId: string) => `/v1/cdn/media/${teamId}/tus`;

async function tusRows(teamId: string): Promise<number> {
  const pg = await connectPg(server.databaseUrl);
  try {
    return Number((await pg.query('select count(*) from tus_upload where team_id = $1', [teamId])).rows[0].count);
  } finally {
    await pg.end();
  }
}

async function tusTempFiles(): Promise<string[]> {
  return readdir(join(server.dataDir, 'files', '.uploads', 'tus')).catch(() => []);
}

/** Creates an upload with a raw request; answers its path. */
async function create(target: TestServer, teamId: string, key: string, length: number, metadata = tusMetadata({ filename: 'clip.mp4' })): Promise<string> {
  const created = await tusRequest(target, 'POST', tusPath(teamId), key, { 'upload-length': String(length), 'upload-metadata': metadata });
  if (created.status !== 201) throw new Error(`creation failed: ${created.status} ${JSON.stringify(created.body)}`);
  return created.headers.get('location')!;
}

function patch(target: TestServer, path: string, key: string, offset: number, body: Buffer, headers: Record<string, string> = {}) {
  return tusRequest(target, 'PATCH', path, key, { 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream', ...headers }, body);
}

async function downloaded(teamId: string, key: string, mediaId: string): Promise<Buffer> {
  const media = await server.media('GET', `/v1/cdn/media/${teamId}/${mediaId}`, key);
  return Buffer.from(await (await fetch(media.body.url)).arrayBuffer());
}

/** The sha256 of a served file, hashed as it arrives: a large file is never held whole in this process, which serves it too. */
async function downloadedSha256(teamId: string, key: string, mediaId: string): Promise<string> {
  const media = await server.media('GET', `/v1/cdn/media/${teamId}/${mediaId}`, key);
  const response = await fetch(media.body.url);
  const hash = createHash('sha256');
  for await (const chunk of response.body!) hash.update(chunk);
  return hash.digest('hex');
}

t.test('OPTIONS is tus discovery; with Origin and Access-Control-Request-Method it is a CORS preflight', async (t) => {
  const team = await server.createTeam('TusOptions');
  const discovery = await server.request('OPTIONS', tusPath(team.teamId));
  t.equal(discovery.status, 204);
  t.equal(discovery.headers.get('tus-resumable'), '1.0.0');
  t.equal(discovery.headers.get('tus-version'), '1.0.0');
  t.equal(discovery.headers.get('tus-extension'), 'creation,creation-with-upload,termination,expiration');
  t.equal(discovery.headers.get('tus-max-size'), String(260_000_000));
  const preflight = await server.request('OPTIONS', tusPath(team.teamId), {
    headers: { origin: 'https://cfx-nui-game', 'access-control-request-method': 'PATCH', 'access-control-request-headers': 'upload-offset,tus-resumable' },
  });
  t.equal(preflight.status, 204);
  t.match(preflight.headers.get('access-control-allow-methods'), /PATCH/);
  t.match(preflight.headers.get('access-control-allow-headers'), /Upload-Offset/);
  t.equal(preflight.headers.get('tus-extension'), null, 'the preflight is not tus discovery');
});

t.test('a 100 MiB upload cut twice mid-PATCH resumes and lands whole: identical bytes, listed and counted once, Media-Id', async (t) => {
  const team = await server.createTeam('TusBig', 'enterprise');
  await subscribeToUploads(server.databaseUrl, team.teamId);
  const content = randomBytes(100 * MiB);
  const metricsBefore = await metricValues();
  // The connection is cut twice mid-PATCH (a proxy resets it after 30 and 65 MiB went through). The
  // first time the client retries by itself (HEAD, then PATCH from the server's offset); the second
  // time it is stopped and a new client that knows only the upload URL takes over.
  const handOver = deferred<string>();
  const proxy = await cuttingProxy(server.app.port, [30 * MiB, 65 * MiB], (index) => {
    if (index === 1) void first.upload.abort().then(() => handOver.resolve(first.upload.url!));
  });
  t.teardown(() => proxy.close());
  const first = tusUpload(proxy, team.teamId, team.key, content, {
    metadata: { filename: 'match.mp4', filetype: 'video/mp4', tags: 'replay,eu', folder: 'replays/2026' },
  });
  const url = (await Promise.race([handOver.promise, first.done.then(() => { throw new Error('finished without the second cut'); })])).replace(proxy.baseUrl, server.baseUrl);
  await waitUnlocked(url);
  const midway = await tusRequest(server, 'HEAD', new URL(url).pathname, team.key);
  t.equal(midway.status, 200);
  const offset = Number(midway.headers.get('upload-offset'));
  t.ok(offset > 0 && offset < content.length, `the server kept ${offset} bytes`);
  t.equal(midway.headers.get('upload-length'), String(content.length));
  t.equal(midway.headers.get('cache-control'), 'no-store');
  t.ok(Date.parse(midway.headers.get('upload-expires')!) > Date.now() + 23 * 3600_000, 'Upload-Expires a day ahead');
  t.match(midway.headers.get('upload-metadata'), /filename /);
  t.equal(midway.headers.get('media-id'), null, 'no media file yet');

  const second = tusUpload(server, team.teamId, team.key, content, { uploadUrl: url, metadata: {} });
  const { mediaId } = await second.done;
  t.ok(mediaId, 'Media-Id on the final PATCH');
  t.match(mediaId, UUID_V7, 'a time-ordered id (UUIDv7), as every upload route makes');
  const after = await tusRequest(server, 'HEAD', new URL(url).pathname, team.key);
  t.equal(after.headers.get('media-id'), mediaId, 'Media-Id on HEAD after completion');
  t.equal(after.headers.get('upload-offset'), String(content.length));

  t.equal(await downloadedSha256(team.teamId, team.key, mediaId!), sha256(content), 'the served bytes are the uploaded bytes');
  const listed = await server.media('GET', `/v1/cdn/media/${team.teamId}`, team.key);
  t.equal(listed.body.media?.length ?? listed.body.length, 1, 'listed once');
  const media = await server.media('GET', `/v1/cdn/media/${team.teamId}/${mediaId}`, team.key);
  t.equal(media.status, 200);
  const state = await teamStorageState(server.databaseUrl, team.teamId);
  t.same(state, { files: 1, sumOfSizes: content.length, usedStorage: content.length, reservedStorage: 0, reservations: 0 }, 'counted once, nothing reserved');
  const pg = await connectPg(server.databaseUrl);
  t.teardown(() => pg.end());
  const file = (await pg.query('select file_name, tags, content_type, hash from media_file where id = $1', [mediaId])).rows[0];
  t.match(file, { file_name: 'match.mp4', tags: ['replay', 'eu'], content_type: 'video/mp4' });
  t.match(file.hash, /^[0-9a-f]{16}$/, 'a content hash of all bytes');
  const events = await pg.query(`select payload from media_event where team_id = $1 and kind = 'media.uploaded'`, [team.teamId]);
  t.equal(events.rows.length, 1, 'one Media uploaded event');
  t.equal(events.rows[0].payload.media.id, mediaId);
  t.same(await tusTempFiles(), [], 'no temp file left');
  const metrics = await metricValues();
  t.ok(metrics.resumed - metricsBefore.resumed > 0, 'resumed bytes counted');
  t.equal(metrics.completed - metricsBefore.completed, 1, 'one completion counted');
  t.equal(metrics.inProgress, 0, 'nothing in progress');
});

async function metricValues(): Promise<{ resumed: number; completed: number; inProgress: number }> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { resumed: value('media_tus_resumed_bytes_total'), completed: value('media_tus_uploads_completed_total'), inProgress: value('media_tus_uploads_in_progress') };
}

t.test('creations refused by their headers leave nothing behind', async (t) => {
  const team = await server.createTeam('TusRefused');
  const before = await teamStorageState(server.databaseUrl, team.teamId);
  const refusals: [string, Record<string, string>, number, string][] = [
    ['over the route limit', { 'upload-length': String(260_000_001), 'upload-metadata': tusMetadata({ filename: 'a.mp4' }) }, 413, 'error.payloadTooLarge'],
    ['over maxMediaFileSize', { 'upload-length': String(10_000_001), 'upload-metadata': tusMetadata({ filename: 'a.mp4' }) }, 402, 'error.teamLimits.maxMediaFileSize'],
    ['a blocked name', { 'upload-length': '100', 'upload-metadata': tusMetadata({ filename: 'page.html' }) }, 415, 'error.unsupportedMediaType'],
    ['a blocked declared type', { 'upload-length': '100', 'upload-metadata': tusMetadata({ filename: 'a.png', filetype: 'image/svg+xml' }) }, 415, 'error.unsupportedMediaType'],
    ['no file name', { 'upload-length': '100', 'upload-metadata': tusMetadata({ filetype: 'image/png' }) }, 400, 'error.missingArgument'],
    ['invalid tags', { 'upload-length': '100', 'upload-metadata': tusMetadata({ filename: 'a.png', tags: 'Upper' }) }, 400, 'error.badRequest'],
    ['folder and folderId', { 'upload-length': '100', 'upload-metadata': tusMetadata({ filename: 'a.png', folder: 'x', folderId: randomUUIDLike() }) }, 400, 'error.badRequest'],
    ['public not a boolean', { 'upload-length': '100', 'upload-metadata': tusMetadata({ filename: 'a.png', public: 'yes' }) }, 400, 'error.badRequest'],
    ['an unknown folder', { 'upload-length': '100', 'upload-metadata': tusMetadata({ filename: 'a.png', folderId: randomUUIDLike() }) }, 404, 'error.notFound'],
    ['malformed metadata', { 'upload-length': '100', 'upload-metadata': 'filename not-base64!' }, 400, 'error.badRequest'],
    ['no Upload-Length', { 'upload-metadata': tusMetadata({ filename: 'a.png' }) }, 400, 'error.badRequest'],
    ['Upload-Defer-Length', { 'upload-defer-length': '1', 'upload-metadata': tusMetadata({ filename: 'a.png' }) }, 400, 'error.badRequest'],
    ['no Tus-Resumable', { 'tus-resumable': '', 'upload-length': '100', 'upload-metadata': tusMetadata({ filename: 'a.png' }) }, 412, 'error.tus.versionUnsupported'],
  ];
  for (const [what, headers, status, messageKey] of refusals) {
    const response = await server.media('POST', tusPath(team.teamId), team.key, { headers: { 'tus-resumable': '1.0.0', ...headers } });
    t.equal(response.status, status, `${what}: ${status}`);
    t.equal(response.body.messageKey.startsWith(messageKey), true, `${what}: ${response.body.messageKey}`);
    t.equal(response.headers.get('tus-resumable'), '1.0.0', `${what}: the answer names the protocol`);
    if (status === 412) t.equal(response.headers.get('tus-version'), '1.0.0');
  }
  // Storage: the team's free storage is smaller than the upload.
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxTeamStorage: 1024 });
  const full = await server.media('POST', tusPath(team.teamId), team.key, {
    headers: { 'tus-resumable': '1.0.0', 'upload-length': String(2 * MiB), 'upload-metadata': tusMetadata({ filename: 'a.mp4' }) },
  });
  t.equal(full.status, 402);
  t.equal(full.body.messageKey, 'error.teamLimits.maxTeamStorage');
  await expectNothingCounted(t, server, team.teamId, before);
  t.equal(await tusRows(team.teamId), 0, 'no upload row');
  t.same((await storedObjects('fs', server.dataDir, team.teamId)).objects, [], 'nothing stored');
  t.same(await tusTempFiles(), [], 'no temp file');
  // The real client sees the refusal too.
  await t.rejects(tusUpload(server, team.teamId, team.key, pngLike(1000), { metadata: { filename: 'evil.html' }, retryDelays: [] }).done, /415/);
});

function randomUUIDLike(): string {
  return '7f4895e7-88ff-402a-8be8-65c8abe06a88';
}

t.test('content sniffed as a blocked type: 415, and the upload is terminated', async (t) => {
  const team = await server.createTeam('TusSniff');
  const before = await teamStorageState(server.databaseUrl, team.teamId);
  const html = Buffer.concat([Buffer.from('<!DOCTYPE html><html><script>alert(1)</script>'), Buffer.alloc(8 * KiB, 0x20)]);
  const path = await create(server, team.teamId, team.key, html.length, tusMetadata({ filename: 'picture.png', filetype: 'image/png' }));
  const refused = await patch(server, path, team.key, 0, html);
  t.equal(refused.status, 415);
  t.equal(refused.body.messageKey, 'error.unsupportedMediaType');
  t.equal((await tusRequest(server, 'HEAD', path, team.key)).status, 404, 'the upload is gone');
  await expectNothingCounted(t, server, team.teamId, before);
  t.equal(await tusRows(team.teamId), 0);
  t.same(await tusTempFiles(), []);
});

t.test('PATCH checks: Tus-Resumable 412, content type 415, offset 409, past Upload-Length 413, unknown upload 404', async (t) => {
  const team = await server.createTeam('TusPatch');
  const content = pngLike(64 * KiB);
  const path = await create(server, team.teamId, team.key, content.length, tusMetadata({ filename: 'a.png' }));
  const noVersion = await tusRequest(server, 'PATCH', path, team.key, { 'tus-resumable': '0.2.2', 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, content);
  t.equal(noVersion.status, 412);
  t.equal(noVersion.headers.get('tus-version'), '1.0.0');
  t.equal((await patch(server, path, team.key, 0, content, { 'content-type': 'application/octet-stream' })).status, 415);
  const wrongOffset = await patch(server, path, team.key, 5, content);
  t.equal(wrongOffset.status, 409);
  t.equal(wrongOffset.body.messageKey, 'error.tus.offsetConflict');
  t.equal((await patch(server, path, team.key, 0, Buffer.concat([content, Buffer.alloc(1)]))).status, 413);
  t.equal((await tusRequest(server, 'PATCH', path, team.key, { 'content-type': 'application/offset+octet-stream' }, content)).status, 400, 'no Upload-Offset');
  t.equal((await patch(server, `${tusPath(team.teamId)}/${randomUUIDLike()}`, team.key, 0, content)).status, 404);
  t.equal((await patch(server, `${tusPath(team.teamId)}/not-an-id`, team.key, 0, content)).status, 404);
  const half = await patch(server, path, team.key, 0, content.subarray(0, 1000));
  t.equal(half.status, 204);
  t.equal(half.headers.get('upload-offset'), '1000');
  t.ok(half.headers.get('upload-expires'));
  const rest = await patch(server, path, team.key, 1000, content.subarray(1000));
  t.equal(rest.status, 204);
  t.equal(rest.headers.get('upload-offset'), String(content.length));
  t.match(rest.headers.get('media-id'), /^[0-9a-f-]{36}$/);
  t.equal((await patch(server, path, team.key, 0, content)).status, 409, 'a completed upload takes no more bytes');
  // At its own offset too: 403 (tus: a PATCH to an upload that takes no bytes), not 204 as if it had taken some.
  const finished = await patch(server, path, team.key, content.length, Buffer.alloc(0));
  t.equal(finished.status, 403, 'a PATCH to a completed upload at its offset');
  t.equal(finished.body.messageKey, 'error.tus.uploadComplete');
  t.equal(finished.headers.get('tus-resumable'), '1.0.0');
  t.equal((await patch(server, path, team.key, content.length, Buffer.from('x'))).status, 403, 'with bytes as well');
  t.match(await teamStorageState(server.databaseUrl, team.teamId), { files: 1, usedStorage: content.length, reservedStorage: 0 }, 'nothing changed');
  // An instance that died between the commit and marking the upload complete: the next PATCH finishes the job, once.
  const pg = await connectPg(server.databaseUrl);
  t.teardown(() => pg.end());
  await pg.query('update tus_upload set completed_at = null where id = $1', [path.split('/').pop()]);
  const again = await patch(server, path, team.key, content.length, Buffer.alloc(0));
  t.equal(again.status, 204);
  t.equal(again.headers.get('media-id'), rest.headers.get('media-id'));
  t.match(await teamStorageState(server.databaseUrl, team.teamId), { files: 1, usedStorage: content.length, reservedStorage: 0, reservations: 0 }, 'counted once');
  t.equal((await tusRequest(server, 'DELETE', path, team.key)).status, 409, 'a completed upload is not terminated');
  // Another team's key reaches none of it.
  const other = await server.createTeam('TusOther');
  t.equal((await tusRequest(server, 'HEAD', path, other.key)).status, 401);
  t.equal((await tusRequest(server, 'HEAD', `${tusPath(other.teamId)}/${path.split('/').pop()}`, other.key)).status, 404);
});

t.test('Upload-Length 0: an empty file, stored at creation as the multipart route stores one; the real client too', async (t) => {
  const team = await server.createTeam('TusEmpty');
  const created = await tusRequest(server, 'POST', tusPath(team.teamId), team.key, {
    'upload-length': '0', 'upload-metadata': tusMetadata({ filename: 'empty.txt', filetype: 'text/plain' }),
  });
  t.equal(created.status, 201, JSON.stringify(created.body));
  t.equal(created.headers.get('upload-offset'), '0');
  const mediaId = created.headers.get('media-id');
  t.match(mediaId, /^[0-9a-f-]{36}$/, 'complete at creation: Media-Id');
  const head = await tusRequest(server, 'HEAD', created.headers.get('location')!, team.key);
  t.equal(head.headers.get('media-id'), mediaId);
  t.equal(head.headers.get('upload-offset'), '0');
  t.equal((await downloaded(team.teamId, team.key, mediaId!)).length, 0, 'an empty file is served');
  // The multipart route stores the same empty file.
  const multipart = await uploadMultipart(server, team.teamId, team.key, { content: Buffer.alloc(0), fileName: 'empty.txt', contentType: 'text/plain' });
  t.equal(multipart.status, 201, 'the multipart route stores an empty file');
  t.equal(multipart.body.size, 0);
  const run = tusUpload(server, team.teamId, team.key, Buffer.alloc(0), { metadata: { filename: 'also-empty.txt' }, retryDelays: [] });
  t.match((await run.done).mediaId, /^[0-9a-f-]{36}$/, 'tus-js-client uploads an empty file');
  t.match(await teamStorageState(server.databaseUrl, team.teamId), { files: 3, usedStorage: 0, reservedStorage: 0, reservations: 0 });
  t.equal(await tusRows(team.teamId), 2, 'the completed uploads answer HEAD until they expire');
});

t.test('creation-with-upload: the POST body is the first bytes', async (t) => {
  const team = await server.createTeam('TusWithUpload');
  const content = pngLike(20 * KiB);
  const created = await tusRequest(server, 'POST', tusPath(team.teamId), team.key, {
    'upload-length': String(content.length), 'upload-metadata': tusMetadata({ filename: 'one.png' }), 'content-type': 'application/offset+octet-stream',
  }, content);
  t.equal(created.status, 201);
  t.equal(created.headers.get('upload-offset'), String(content.length));
  const mediaId = created.headers.get('media-id');
  t.ok(mediaId, 'completed in one request');
  t.same(await downloaded(team.teamId, team.key, mediaId!), content);
  const state = await teamStorageState(server.databaseUrl, team.teamId);
  t.match(state, { files: 1, usedStorage: content.length, reservedStorage: 0, reservations: 0 });
});

t.test('a PATCH while another one appends to the same upload is refused with 423; a dead holder’s lease runs out', async (t) => {
  const team = await server.createTeam('TusLock');
  const content = pngLike(2 * MiB);
  const path = await create(server, team.teamId, team.key, content.length);
  // The first PATCH sends half its body and holds the connection open.
  const held = httpRequest(`${server.baseUrl}${path}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${team.key}`, 'tus-resumable': '1.0.0', 'upload-offset': '0', 'content-type': 'application/offset+octet-stream', 'content-length': String(content.length) },
  });
  const heldAnswer = new Promise<number>((resolve, reject) => {
    held.on('response', (response) => {
      response.resume();
      resolve(response.statusCode!);
    });
    held.on('error', reject);
  });
  held.write(content.subarray(0, MiB));
  await waitForLock(team.teamId);
  const second = await patch(server, path, team.key, 0, content);
  t.equal(second.status, 423);
  t.equal(second.body.messageKey, 'error.tus.locked');
  t.equal((await tusRequest(server, 'DELETE', path, team.key)).status, 423, 'nor terminated meanwhile');
  held.end(content.subarray(MiB));
  t.equal(await heldAnswer, 204, 'the first PATCH completes');

  // A holder that died (its lease is in the row, nobody renews it) blocks until the lease ends.
  const other = await create(server, team.teamId, team.key, 1000);
  const pg = await connectPg(server.databaseUrl);
  t.teardown(() => pg.end());
  const id = other.split('/').pop();
  await pg.query(`update tus_upload set lock_token = gen_random_uuid(), locked_until = now() + interval '30 seconds' where id = $1`, [id]);
  t.equal((await patch(server, other, team.key, 0, pngLike(1000))).status, 423);
  await pg.query(`update tus_upload set locked_until = now() - interval '1 second' where id = $1`, [id]);
  const taken = await patch(server, other, team.key, 0, pngLike(1000));
  t.equal(taken.status, 204, 'an expired lease is taken over');
  t.ok(taken.headers.get('media-id'));
});

async function waitForLock(teamId: string): Promise<void> {
  const pg = await connectPg(server.databaseUrl);
  try {
    for (let attempt = 0; attempt < 100; attempt++) {
      const rows = await pg.query('select 1 from tus_upload where team_id = $1 and locked_until > now()', [teamId]);
      if (rows.rows.length > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error('the PATCH never took its lease');
  } finally {
    await pg.end();
  }
}

t.test('termination releases the reservation and removes the bytes', async (t) => {
  const team = await server.createTeam('TusTerminate', 'enterprise');
  const before = await teamStorageState(server.databaseUrl, team.teamId);
  const path = await create(server, team.teamId, team.key, 3 * MiB);
  t.match(await teamStorageState(server.databaseUrl, team.teamId), { reservedStorage: 3 * MiB, reservations: 1 }, 'Upload-Length is reserved at creation');
  t.equal((await patch(server, path, team.key, 0, pngLike(MiB))).status, 204);
  t.equal((await tusTempFiles()).length, 1);
  const terminated = await tusRequest(server, 'DELETE', path, team.key);
  t.equal(terminated.status, 204);
  t.equal(terminated.headers.get('tus-resumable'), '1.0.0');
  t.equal((await tusRequest(server, 'HEAD', path, team.key)).status, 404);
  t.equal((await tusRequest(server, 'DELETE', path, team.key)).status, 404);
  await expectNothingCounted(t, server, team.teamId, before);
  t.same(await tusTempFiles(), []);
  // The real client terminates too: its connection is cut (and the client stopped) after 1 MiB reached
  // the service, so the upload cannot have finished before the termination.
  let run: ReturnType<typeof tusUpload> | undefined;
  const proxy = await cuttingProxy(server.app.port, [MiB], () => void run?.upload.abort());
  t.teardown(() => proxy.close());
  run = tusUpload({ baseUrl: proxy.baseUrl }, team.teamId, team.key, pngLike(48 * MiB));
  run.done.catch(() => undefined); // aborted: it never settles as a success
  await waitForOffset(team.teamId);
  await waitUnlocked(run.upload.url!);
  const url = run.upload.url!;
  await Upload.terminate(url, { headers: { Authorization: `Bearer ${team.key}` } });
  await expectNothingCounted(t, server, team.teamId, before);
  t.equal(await tusRows(team.teamId), 0);
});

/** Waits until no request holds the upload (the cut PATCH has recorded what it got). */
async function waitUnlocked(url: string): Promise<void> {
  const pg = await connectPg(server.databaseUrl);
  try {
    for (let attempt = 0; attempt < 200; attempt++) {
      const rows = await pg.query('select 1 from tus_upload where id = $1 and locked_until is null', [url.split('/').pop()]);
      if (rows.rows.length > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error('the upload stayed locked');
  } finally {
    await pg.end();
  }
}

async function waitForOffset(teamId: string): Promise<void> {
  const pg = await connectPg(server.databaseUrl);
  try {
    for (let attempt = 0; attempt < 200; attempt++) {
      const rows = await pg.query('select 1 from tus_upload where team_id = $1 and "offset" > 0 and locked_until is null', [teamId]);
      if (rows.rows.length > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error('no progress recorded');
  } finally {
    await pg.end();
  }
}

t.test('the crash sweep leaves idle unfinished uploads alone and removes expired ones', async (t) => {
  const team = await server.createTeam('TusExpiry');
  const before = await teamStorageState(server.databaseUrl, team.teamId);
  const content = pngLike(2 * MiB);
  const path = await create(server, team.teamId, team.key, content.length);
  t.equal((await patch(server, path, team.key, 0, content.subarray(0, MiB))).status, 204);
  const sweeper = server.app.services.crashSweeper;
  // Two hours idle: far past the crash sweep's age, well before Upload-Expires.
  const early = await sweeper.runOnce(new Date(Date.now() + 2 * 3600_000));
  t.equal(early.tusExpired, 0);
  t.match(await teamStorageState(server.databaseUrl, team.teamId), { reservedStorage: content.length, reservations: 1 }, 'its reservation is kept');
  t.equal((await tusTempFiles()).length, 1, 'its bytes are kept');
  const head = await tusRequest(server, 'HEAD', path, team.key);
  t.equal(head.headers.get('upload-offset'), String(MiB), 'still resumable');
  const expires = Date.parse(head.headers.get('upload-expires')!);
  const swept = await sweeper.runOnce(new Date(expires + 1000));
  t.equal(swept.tusExpired, 1, 'swept once expired');
  t.equal((await tusRequest(server, 'HEAD', path, team.key)).status, 404);
  await expectNothingCounted(t, server, team.teamId, before);
  t.same(await tusTempFiles(), []);
  t.equal(await tusRows(team.teamId), 0);
});

t.test('an upload resumes through a second instance sharing the database and DATA_DIR', async (t) => {
  const second = await startTestServer(t, { databaseUrl: server.databaseUrl, dataDir: server.dataDir, settings: { RATE_LIMIT_POINTS: 100_000 } });
  const team = await server.createTeam('TusTwoFs', 'enterprise');
  const content = randomBytes(12 * MiB);
  const resumed = deferred<string>();
  const proxy = await cuttingProxy(server.app.port, [4 * MiB], () => void first.upload.abort().then(() => resumed.resolve(first.upload.url!)));
  t.teardown(() => proxy.close());
  const first = tusUpload(proxy, team.teamId, team.key, content);
  const url = await Promise.race([resumed.promise, first.done.then(() => { throw new Error('not cut'); })]);
  await waitUnlocked(url);
  const elsewhere = url.replace(proxy.baseUrl, second.baseUrl);
  const head = await tusRequest(second, 'HEAD', new URL(elsewhere).pathname, team.key);
  t.ok(Number(head.headers.get('upload-offset')) > 0, 'part of it was stored through the first instance');
  const { mediaId } = await tusUpload(second, team.teamId, team.key, content, { uploadUrl: elsewhere, metadata: {} }).done;
  t.ok(mediaId);
  t.equal(await downloadedSha256(team.teamId, team.key, mediaId!), sha256(content));
  t.match(await teamStorageState(server.databaseUrl, team.teamId), { files: 1, usedStorage: content.length, reservedStorage: 0, reservations: 0 });
});

t.test('a key narrowed to media:upload uploads with tus; a member without team.media.upload cannot', async (t) => {
  const team = await server.createTeam('TusScoped');
  const scoped = await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, { description: 'game server', scopes: ['media:upload'] });
  t.equal(scoped.status, 201);
  const content = pngLike(300 * KiB);
  const { mediaId } = await tusUpload(server, team.teamId, scoped.body.key, content, { metadata: { filename: 'shot.png' } }).done;
  t.ok(mediaId, 'uploaded with the narrowed key');
  t.same(await downloaded(team.teamId, team.key, mediaId!), content);
  const viewer = await server.admin('POST', `/v1/admin/teams/${team.teamId}/members`, { name: 'viewer', permissions: ['team.media.view'] });
  const viewerKey = await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, { teamMemberId: viewer.body.id });
  const refused = await tusRequest(server, 'POST', tusPath(team.teamId), viewerKey.body.key, { 'upload-length': '10', 'upload-metadata': tusMetadata({ filename: 'a.png' }) });
  t.equal(refused.status, 403);
  t.equal(refused.body.messageKey, 'error.forbidden');
});

t.test('all bytes stored but the completion failed: the next HEAD completes it, so the client gets its Media-Id', async (t) => {
  const team = await server.createTeam('TusHeadCompletes');
  const content = pngLike(100 * KiB);
  const path = await create(server, team.teamId, team.key, content.length, tusMetadata({ filename: 'late.png' }));
  const id = path.split('/').pop()!;
  t.equal((await patch(server, path, team.key, 0, content.subarray(0, content.length - 1))).status, 204);
  // As if the last byte had been stored and recorded, and the completion then failed (storage or database unreachable).
  const { appendFile } = await import('node:fs/promises');
  await appendFile(join(server.dataDir, 'files', '.uploads', 'tus', id), content.subarray(content.length - 1));
  const pg = await connectPg(server.databaseUrl);
  t.teardown(() => pg.end());
  await pg.query('update tus_upload set "offset" = length where id = $1', [id]);
  t.equal(await tusRows(team.teamId), 1);
  // The real client resuming it sees offset == length and takes it for done: the HEAD has completed it by then.
  const { mediaId } = await tusUpload(server, team.teamId, team.key, content, { uploadUrl: `${server.baseUrl}${path}`, metadata: {} }).done;
  t.equal(mediaId, id, 'Media-Id from the HEAD that completed it');
  t.same(await downloaded(team.teamId, team.key, id), content);
  t.match(await teamStorageState(server.databaseUrl, team.teamId), { files: 1, usedStorage: content.length, reservedStorage: 0, reservations: 0 });
  const again = await tusRequest(server, 'HEAD', path, team.key);
  t.equal(again.headers.get('media-id'), id, 'and every HEAD after');
});

t.test('the type check sees the first bytes whole when they come in several PATCHes', async (t) => {
  const team = await server.createTeam('TusSplitHead');
  const html = Buffer.concat([Buffer.from('<!DOCTYPE html><html><body>'), Buffer.alloc(10 * KiB, 0x20)]);
  const path = await create(server, team.teamId, team.key, html.length, tusMetadata({ filename: 'a.png' }));
  t.equal((await patch(server, path, team.key, 0, html.subarray(0, 9))).status, 204, '9 bytes say nothing yet');
  t.equal((await patch(server, path, team.key, 9, html.subarray(9, 2000))).status, 204, 'nor 2000');
  const refused = await patch(server, path, team.key, 2000, html.subarray(2000));
  t.equal(refused.status, 415, 'refused once the first 4 KiB are in');
  t.equal(await tusRows(team.teamId), 0);
  const png = pngLike(10 * KiB);
  const ok = await create(server, team.teamId, team.key, png.length, tusMetadata({ filename: 'b.png' }));
  for (const [from, to] of [[0, 3], [3, 5000], [5000, png.length]] as const) {
    t.equal((await patch(server, ok, team.key, from, png.subarray(from, to))).status, 204);
  }
  const pg = await connectPg(server.databaseUrl);
  t.teardown(() => pg.end());
  const row = (await pg.query('select content_type from media_file where id = $1', [ok.split('/').pop()])).rows[0];
  t.equal(row.content_type, 'image/png', 'sniffed from the head assembled across requests');
});
