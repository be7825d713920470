// Idempotency-Key on tus creation (POST .../tus), against a real server and PostgreSQL: a retried
// creation answers the first one's Location (one upload, one reservation); 422 for another length or
// metadata; 400 for an invalid key; a failed creation does not hold the key; creation-with-upload
// replays its Upload-Offset without storing the retry's bytes; tus-js-client (its `headers` option)
// whose creation answer is lost resumes the one upload.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { connectPg } from '../helpers/database.ts';
import { expectError, startTestServer } from '../helpers/server.ts';
import { KiB, pngLike, teamStorageState } from '../helpers/uploads.ts';
import { firstAnswerLosingProxy, sha256, tusMetadata, tusRequest, tusUpload } from '../helpers/tus.ts';

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
const db = await connectPg(server.databaseUrl);
t.teardown(() => db.end());

const ROUTE = '/v1/cdn/media/:teamId/tus';
const tusPath = (teamId: string) => `/v1/cdn/media/${teamId}/tus`;

async function uploadRows(teamId: string) {
  return (await db.query<{ id: string; offset: string }>('select id, "offset" from tus_upload where team_id = $1', [teamId])).rows;
}

async function replays(): Promise<number> {
  const metric = await server.app.services.metrics.idempotentReplays.get();
  return metric.values.filter((value) => value.labels.route === ROUTE).reduce((sum, value) => sum + value.value, 0);
}

function createKeyed(teamId: string, key: string, idempotencyKey: string, headers: Record<string, string>, body?: Buffer) {
  return tusRequest(server, 'POST', tusPath(teamId), key, { 'idempotency-key': idempotencyKey, ...headers }, body);
}

t.test('a retried creation answers the first Location: one upload, one reservation; another length or metadata is 422', async (t) => {
  const team = await server.createTeam('TusKeyed');
  const key = `tus-${randomUUID()}`;
  const replaysBefore = await replays();
  const metadata = { filename: 'clip.mp4', filetype: 'video/mp4', tags: 'a,b' };
  const request = { 'upload-length': String(100 * KiB), 'upload-metadata': tusMetadata(metadata) };

  const first = await createKeyed(team.teamId, team.key, key, request);
  t.equal(first.status, 201);
  t.equal(first.headers.get('idempotent-replayed'), null, 'a first answer is not marked');
  const location = first.headers.get('location');
  t.ok(location);

  // The same pairs in another order: the same creation.
  const reordered = tusMetadata({ tags: 'a,b', filename: 'clip.mp4', filetype: 'video/mp4' });
  const again = await createKeyed(team.teamId, team.key, key, { ...request, 'upload-metadata': reordered });
  t.equal(again.status, 201);
  t.equal(again.headers.get('idempotent-replayed'), 'true', 'marked replayed');
  t.equal(again.headers.get('location'), location, 'the same Location');
  t.equal(again.headers.get('upload-expires'), first.headers.get('upload-expires'), 'the same Upload-Expires');
  t.equal(again.headers.get('tus-resumable'), '1.0.0');
  t.ok(again.headers.get('ratelimit-remaining'), 'with this request\'s RateLimit headers');
  t.equal((await uploadRows(team.teamId)).length, 1, 'one upload');
  t.equal((await teamStorageState(server.databaseUrl, team.teamId)).reservedStorage, 100 * KiB, 'reserved once');
  t.equal(await replays() - replaysBefore, 1, 'the replay is counted under the route');

  expectError(t, await createKeyed(team.teamId, team.key, key, { ...request, 'upload-length': String(101 * KiB) }), 422, 'error.media.idempotencyKeyReused');
  expectError(t, await createKeyed(team.teamId, team.key, key, { ...request, 'upload-metadata': tusMetadata({ ...metadata, tags: 'a' }) }), 422, 'error.media.idempotencyKeyReused');
  const conflict = await createKeyed(team.teamId, team.key, key, { ...request, 'upload-length': String(101 * KiB) });
  t.equal(conflict.headers.get('tus-resumable'), '1.0.0', 'a 422 carries Tus-Resumable too');
  t.equal((await uploadRows(team.teamId)).length, 1, 'a reused key creates nothing');
  t.equal((await teamStorageState(server.databaseUrl, team.teamId)).reservedStorage, 100 * KiB, 'nor reserves');

  // The replayed Location is the upload: it finishes with PATCH.
  const content = pngLike(100 * KiB);
  const done = await tusRequest(server, 'PATCH', location!, team.key, { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, content);
  t.equal(done.status, 204);
  t.ok(done.headers.get('media-id'), 'complete');
});

t.test('an invalid key is 400 and creates nothing; a failed creation does not hold the key', async (t) => {
  const team = await server.createTeam('TusKeyFail');
  const request = { 'upload-length': String(10 * KiB), 'upload-metadata': tusMetadata({ filename: 'a.png' }) };
  const invalid = await createKeyed(team.teamId, team.key, 'x'.repeat(256), request);
  expectError(t, invalid, 400, 'error.badRequest');
  t.equal((await uploadRows(team.teamId)).length, 0, 'no upload');

  const key = 'tus-fail-1';
  const tooLarge = { ...request, 'upload-length': String(50_000_000) }; // above the free plan's maxMediaFileSize
  expectError(t, await createKeyed(team.teamId, team.key, key, tooLarge), 402, 'error.teamLimits.maxMediaFileSize');
  expectError(t, await createKeyed(team.teamId, team.key, key, tooLarge), 402, 'error.teamLimits.maxMediaFileSize');
  const blocked = { ...request, 'upload-metadata': tusMetadata({ filename: 'run.sh' }) };
  expectError(t, await createKeyed(team.teamId, team.key, key, blocked), 415, 'error.unsupportedMediaType');
  t.same((await db.query('select key from idempotency_key where team_id = $1', [team.teamId])).rows, [], 'the refusals freed the key');

  const created = await createKeyed(team.teamId, team.key, key, request);
  t.equal(created.status, 201, 'the key is free for a creation that works');
  t.equal(created.headers.get('idempotent-replayed'), null);
  t.equal((await uploadRows(team.teamId)).length, 1);
});

t.test('creation-with-upload: the retry gets the first Upload-Offset, and its bytes are not stored', async (t) => {
  const team = await server.createTeam('TusKeyedBody');
  const content = pngLike(64 * KiB);
  const key = `tus-body-${randomUUID()}`;
  const request = {
    'upload-length': String(content.length),
    'upload-metadata': tusMetadata({ filename: 'body.png' }),
    'content-type': 'application/offset+octet-stream',
  };
  const first = await createKeyed(team.teamId, team.key, key, request, content.subarray(0, 16 * KiB));
  t.equal(first.status, 201);
  t.equal(first.headers.get('upload-offset'), String(16 * KiB), 'the first chunk stored');
  const location = first.headers.get('location')!;

  // The retry sends another first chunk (a client with another chunk size): the same creation, nothing stored.
  const retry = await createKeyed(team.teamId, team.key, key, request, content.subarray(0, 32 * KiB));
  t.equal(retry.status, 201);
  t.equal(retry.headers.get('idempotent-replayed'), 'true');
  t.equal(retry.headers.get('location'), location);
  t.equal(retry.headers.get('upload-offset'), String(16 * KiB), 'the first answer\'s Upload-Offset');
  const head = await tusRequest(server, 'HEAD', location, team.key);
  t.equal(head.headers.get('upload-offset'), String(16 * KiB), 'the retry\'s bytes were not stored');
  t.equal((await uploadRows(team.teamId)).length, 1, 'one upload');

  const rest = await tusRequest(server, 'PATCH', location, team.key, { 'upload-offset': String(16 * KiB), 'content-type': 'application/offset+octet-stream' }, content.subarray(16 * KiB));
  t.equal(rest.status, 204);
  const mediaId = rest.headers.get('media-id')!;
  const media = await server.media('GET', `/v1/cdn/media/${team.teamId}/${mediaId}`, team.key);
  t.equal(sha256(Buffer.from(await (await fetch(media.body.url)).arrayBuffer())), sha256(content), 'the bytes are the file, once');
  const state = await teamStorageState(server.databaseUrl, team.teamId);
  t.same({ files: state.files, usedStorage: state.usedStorage, reservedStorage: state.reservedStorage }, { files: 1, usedStorage: content.length, reservedStorage: 0 }, 'counted once');
});

for (const keyed of [true, false]) {
  t.test(`tus-js-client whose creation answer is lost ${keyed ? 'with' : 'without'} an Idempotency-Key`, async (t) => {
    const team = await server.createTeam(keyed ? 'TusLostKeyed' : 'TusLostPlain');
    const proxy = await firstAnswerLosingProxy(server.app.port);
    t.teardown(() => proxy.close());
    const content = pngLike(200 * KiB);
    const headers: Record<string, string> = { Authorization: `Bearer ${team.key}` };
    if (keyed) headers['Idempotency-Key'] = randomUUID();
    const run = tusUpload({ baseUrl: proxy.baseUrl }, team.teamId, team.key, content, { headers, metadata: { filename: 'lost.png' } });
    const { mediaId } = await run.done;
    t.ok(proxy.lost, 'the creation\'s answer was lost');
    t.ok(mediaId, 'the upload completed');
    const rows = await uploadRows(team.teamId);
    if (keyed) {
      t.equal(rows.length, 1, 'the retried creation got the first upload back: one upload');
      t.equal(await teamStorageState(server.databaseUrl, team.teamId).then((state) => state.reservedStorage), 0, 'nothing left reserved');
    } else {
      // The control: without the key the retry creates a second upload, the first one left to expire with its reservation.
      t.equal(rows.length, 2, 'without the key, a second upload');
      t.equal(await teamStorageState(server.databaseUrl, team.teamId).then((state) => state.reservedStorage), content.length, 'the orphan holds its reservation');
    }
    const media = await server.media('GET', `/v1/cdn/media/${team.teamId}/${mediaId}`, team.key);
    t.equal(sha256(Buffer.from(await (await fetch(media.body.url)).arrayBuffer())), sha256(content), 'bytes identical');
  });
}
