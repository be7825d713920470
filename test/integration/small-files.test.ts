import { access, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import t, { type Test } from 'tap';
import { hashContent, loadXxhash } from '../../src/uploads/hashing/content-hash.ts';
import { connectPg } from '../helpers/database.ts';
import { startTestServer, type CreatedTeam, type TestServer } from '../helpers/server.ts';
import { driverSettings } from '../helpers/storage.ts';
import { expectNothingCounted, KiB, multipartBody, pngLike, sendChunked, teamStorageState, uploadJson, uploadMultipart, uploadPath } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';
import { UUID_V7 } from '../helpers/uuid-v7.ts';

// Issue 38: a media file of at most DATABASE_FILE_MAX_BYTES (by its body's declared length) is kept
// in the database, written by the batch commit that writes its row: no file, no S3 request. It is
// served, previewed, thumbnailed, stripped, counted and deleted like any other; a larger file and a
// body of unknown length go to the object store; a refusal leaves nothing in either place.

const xxhash = await loadXxhash();
const settings = { ...driverSettings('fs'), DATABASE_FILE_MAX_BYTES: 64 * KiB, RATE_LIMIT_POINTS: 100_000 };
const server = await startTestServer(t, { settings });
const db = await connectPg(server.databaseUrl);
t.teardown(() => db.end());

/** Where the row says the file is, and the bytes the database holds for it (null: none). */
async function placeOf(mediaId: string): Promise<{ location: string | null; content: Buffer | null }> {
  const { rows } = await db.query<{ storage_location: string | null; content: Buffer | null }>(
    'select m.storage_location, c.content from media_file m left join media_content c on c.media_id = m.id where m.id = $1', [mediaId],
  );
  if (!rows[0]) throw new Error(`no row for ${mediaId}`);
  return { location: rows[0].storage_location, content: rows[0].content };
}

async function storeFiles(teamId: string): Promise<string[]> {
  return readdir(join(server.dataDir, 'files', 'media', teamId)).catch(() => []);
}

async function contentRows(teamId: string): Promise<number> {
  const { rows } = await db.query<{ n: string }>('select count(*) as n from media_content c join media_file m on m.id = c.media_id where m.team_id = $1', [teamId]);
  return Number(rows[0]!.n);
}

function logText(bytes: number): Buffer {
  const lines: string[] = [];
  for (let index = 0; lines.join('\n').length < bytes; index++) lines.push(`{"level":"info","tick":${index},"msg":"server tick took ${index % 97} ms"}`);
  return Buffer.from(lines.join('\n').slice(0, bytes));
}

async function get(path: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${server.baseUrl}${path}`, { headers });
  return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) };
}

t.test('a small log and a small image land in the database with their rows and are served like any file', async (t) => {
  const team = await server.createTeam('Logs');
  const log = logText(8 * KiB);
  const posted = await uploadJson(server, team.teamId, team.key, { file: `data:text/plain;base64,${log.toString('base64')}`, fileName: 'server.log', public: true });
  t.equal(posted.status, 201, 'the log is stored');
  t.match(posted.body.id, UUID_V7, 'its id is time-ordered (UUIDv7): uploads insert at the right edge of the indexes keyed by id');
  const place = await placeOf(posted.body.id);
  t.equal(place.location, 'db', 'its row says it is in the database');
  t.ok(place.content?.equals(log), 'the database holds its bytes');
  t.same(await storeFiles(team.teamId), [], 'no file was written');
  t.equal(posted.body.usedTeamStorage, log.length, 'its size is counted');

  const path = new URL(posted.body.publicUrl).pathname;
  const whole = await get(path);
  t.equal(whole.status, 200);
  t.ok(whole.body.equals(log), 'served byte for byte');
  t.equal(whole.headers.get('etag'), `"${hashContent(xxhash, log)}"`, 'its ETag is its content hash, as for any file');
  t.equal((await get(path, { 'if-none-match': whole.headers.get('etag')! })).status, 304, 'a conditional request is answered 304');
  const range = await get(path, { range: 'bytes=100-199' });
  t.equal(range.status, 206);
  t.equal(range.headers.get('content-range'), `bytes 100-199/${log.length}`);
  t.ok(range.body.equals(log.subarray(100, 200)), 'a range is served from the database');
  const tail = await get(path, { range: `bytes=-10` });
  t.ok(tail.body.equals(log.subarray(log.length - 10)), 'a suffix range too');
  t.equal((await get(path, { range: `bytes=${log.length}-` })).status, 416, 'a range past the end is refused');

  const preview = await server.media('GET', `/v1/cdn/media/${team.teamId}/preview/${posted.body.id}?lines=2&from=end`, team.key);
  t.equal(preview.status, 200, 'a text preview reads it from the database');
  t.same(preview.body.lines, log.toString().split('\n').slice(-2));

  const image = await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 10, g: 120, b: 200 } } }).png().toBuffer();
  const picture = await uploadMultipart(server, team.teamId, team.key, { content: image, fileName: 'icon.png' });
  t.equal(picture.status, 201);
  t.ok(picture.body.id > posted.body.id, 'a later upload has a later id (multipart, like JSON)');
  t.equal((await placeOf(picture.body.id)).location, 'db');
  t.ok(await eventually(async () => (await db.query('select 1 from media_file where id = $1 and thumbnail_status = $2', [picture.body.id, 'ready'])).rowCount === 1),
    'its thumbnail is made from the bytes in the database');
});

t.test('small files are compressed with lz4 where the server has it and kept uncompressed where it has not; only images and videos are queued for thumbnails', async (t) => {
  const team = await server.createTeam('Rows');
  const log = logText(8 * KiB);
  const posted = await uploadJson(server, team.teamId, team.key, { file: `data:text/plain;base64,${log.toString('base64')}`, fileName: 'tick.log' });
  t.equal(posted.status, 201);
  const lz4 = await db.query('create temporary table if not exists lz4_probe (x bytea compression lz4)').then(() => true, () => false);
  const { rows } = await db.query<{ method: string | null; stored: number; storage: string }>(
    `select pg_column_compression(c.content) as method, pg_column_size(c.content) as stored, a.attstorage as storage
       from media_content c, pg_attribute a
      where c.media_id = $1 and a.attrelid = 'media_content'::regclass and a.attname = 'content'`, [posted.body.id],
  );
  if (lz4) {
    t.equal(rows[0]!.storage, 'm', 'kept in the row (storage main)');
    t.equal(rows[0]!.method, 'lz4', 'compressed with lz4');
    t.ok(rows[0]!.stored < log.length, 'in less than its size');
  } else {
    t.equal(rows[0]!.storage, 'e', 'pglz costs more than it saves: storage external');
    t.equal(rows[0]!.method, null, 'not compressed');
  }
  const queued = await db.query<{ thumbnail_status: string | null }>('select thumbnail_status from media_file where id = $1', [posted.body.id]);
  t.equal(queued.rows[0]!.thumbnail_status, null, 'a log is not queued for a thumbnail');
  const picture = await uploadMultipart(server, team.teamId, team.key, { content: pngLike(4 * KiB), fileName: 'shot.png' });
  const image = await db.query<{ thumbnail_status: string | null }>('select thumbnail_status from media_file where id = $1', [picture.body.id]);
  t.not(image.rows[0]!.thumbnail_status, null, 'an image is');
});

t.test('a file above DATABASE_FILE_MAX_BYTES and a body of unknown length go to the object store', async (t) => {
  const team = await server.createTeam('Large');
  const large = pngLike(65 * KiB);
  const posted = await uploadMultipart(server, team.teamId, team.key, { content: large, fileName: 'large.png' });
  t.equal(posted.status, 201);
  t.equal((await placeOf(posted.body.id)).location, 'fs', 'a body that may hold more than the threshold: the object store');
  t.same(await storeFiles(team.teamId), [posted.body.id]);

  const small = pngLike(2 * KiB);
  const { body, contentType } = multipartBody([{ content: small, fileName: 'chunked.png' }]);
  const chunked = await sendChunked(`${server.baseUrl}${uploadPath(team.teamId)}`, { authorization: `Bearer ${team.key}`, 'content-type': contentType }, body.length, body, Buffer.alloc(0));
  t.equal(chunked.status, 201);
  t.same((await placeOf(chunked.body.id)), { location: 'fs', content: null }, 'a chunked body of unknown length: the object store');
  t.equal(await contentRows(team.teamId), 0);
});

t.test('a refused small upload leaves nothing: no row, no bytes, nothing counted', async (t) => {
  const team = await server.createTeam('Refused');
  t.equal((await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxTeamStorage: 4 })).status, 200);
  const first = await uploadJson(server, team.teamId, team.key, { file: logText(3 * KiB).toString('base64'), fileName: 'a.log' });
  t.equal(first.status, 201);
  const before = await teamStorageState(server.databaseUrl, team.teamId);
  const over = await uploadJson(server, team.teamId, team.key, { file: logText(3 * KiB).toString('base64'), fileName: 'b.log' });
  t.equal(over.status, 402, 'over the team storage: 402');
  await expectNothingCounted(t, server, team.teamId, before);
  const blocked = await uploadMultipart(server, team.teamId, team.key, { content: Buffer.from('MZ\x90\x00 not really'), fileName: 'tool.exe' });
  t.equal(blocked.status, 415, 'a blocked type: 415');
  await expectNothingCounted(t, server, team.teamId, before);
  const folder = await uploadJson(server, team.teamId, team.key, { file: logText(100).toString('base64'), fileName: 'c.log', folderId: '00000000-0000-4000-8000-000000000000' });
  t.equal(folder.status, 404, 'a folder that does not exist: 404');
  await expectNothingCounted(t, server, team.teamId, before);
  t.equal(await contentRows(team.teamId), 1, 'only the stored file\'s bytes are in the database');
  t.same(await storeFiles(team.teamId), []);
});

t.test('deleting small files (one, then in bulk) frees their rows, their bytes and their storage', async (t) => {
  const team = await server.createTeam('Deletes');
  const ids: string[] = [];
  for (const name of ['a.log', 'b.log', 'c.log']) {
    const posted = await uploadJson(server, team.teamId, team.key, { file: logText(2 * KiB).toString('base64'), fileName: name });
    ids.push(posted.body.id);
  }
  t.equal(await contentRows(team.teamId), 3);
  t.equal((await server.media('DELETE', `/v1/cdn/media/${team.teamId}/delete/${ids[0]}`, team.key)).status, 200);
  t.equal(await contentRows(team.teamId), 2, 'its bytes went with its row');
  const bulk = await server.media('POST', `/v1/cdn/media/${team.teamId}/bulk`, team.key, { body: { action: 'delete', ids: ids.slice(1) } });
  t.equal(bulk.status, 200, 'a bulk delete');
  t.equal(await contentRows(team.teamId), 0, 'nothing left in the database');
  const state = await teamStorageState(server.databaseUrl, team.teamId);
  t.equal(state.usedStorage, 0, 'the storage is free again');
  t.equal(state.files, 0);
});

t.test("a folder's rules sweep small files out of the database: their rows, bytes and storage go", async (t) => {
  const team = await server.createTeam('SweptSmall');
  const folder = await server.media('POST', `/v1/cdn/media/${team.teamId}/folders`, team.key, { body: { name: 'logs' } });
  t.equal(folder.status, 201, JSON.stringify(folder.body));
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) {
    const posted = await uploadJson(server, team.teamId, team.key, { file: logText(3 * KiB + i).toString('base64'), fileName: `round-${i}.log`, folderId: folder.body.id });
    t.equal(posted.status, 201, JSON.stringify(posted.body));
    ids.push(posted.body.id);
    await db.query('update media_file set created_at = $1 where id = $2', [new Date(Date.UTC(2099, 11, 31, 20 + i)), posted.body.id]);
  }
  t.equal(await contentRows(team.teamId), 4, 'all four in the database');
  const kept = await server.media('PATCH', `/v1/cdn/media/${team.teamId}/folders/${folder.body.id}`, team.key, { body: { maxFiles: 1 } });
  t.equal(kept.status, 200, JSON.stringify(kept.body));
  // An hour far from the real clock, which the service's own hourly sweep never claims.
  const swept = await server.app.services.folderSweeper.runOnce(new Date(Date.UTC(2100, 0, 1, 0, 30)));
  t.same(swept, { ran: true, deleted: 3 }, 'the three oldest are deleted');
  const { rows } = await db.query<{ id: string }>('select m.id from media_file m join media_content c on c.media_id = m.id where m.team_id = $1', [team.teamId]);
  t.same(rows.map((row) => row.id), [ids[3]], 'the newest stays, with its bytes; the others left no bytes behind');
  const state = await teamStorageState(server.databaseUrl, team.teamId);
  t.equal(state.usedStorage, 3 * KiB + 3, 'only the kept file is counted');
  t.equal(state.usedStorage, state.sumOfSizes);
  t.same(await storeFiles(team.teamId), [], 'no file in the object store either');
});

t.test('a small image whose metadata is stripped stays in the database, stripped', async (t) => {
  const team = await server.createTeam('Strip');
  const jpeg = await sharp({ create: { width: 120, height: 80, channels: 3, background: { r: 200, g: 90, b: 30 } } })
    .withMetadata({ orientation: 6 }).withExifMerge({ IFD0: { Make: 'TestCam' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '48/1 8/1 0/1' } }).jpeg().toBuffer();
  const posted = await uploadMultipart(server, team.teamId, team.key, { content: jpeg, fileName: 'phone.jpg' }, '?stripMetadata=true');
  t.equal(posted.status, 201);
  const place = await placeOf(posted.body.id);
  t.equal(place.location, 'db');
  const stored = place.content!;
  t.not(stored.length, jpeg.length, 'the stored bytes are the stripped image');
  const metadata = await sharp(stored).metadata();
  t.equal(metadata.exif, undefined, 'no EXIF left');
  t.same([metadata.width, metadata.height], [80, 120], 'turned upright');
  const { rows } = await db.query<{ size: string; hash: string }>('select size, hash from media_file where id = $1', [posted.body.id]);
  t.equal(Number(rows[0]!.size), stored.length, 'the row counts the stripped size');
  t.equal(rows[0]!.hash, hashContent(xxhash, stored), 'and its hash');
  t.same(await storeFiles(team.teamId), []);
});

/** `count` uploads of `size` bytes as JSON (small) or multipart (large), all at once, on `servers` in turn. */
function burst(servers: TestServer[], team: CreatedTeam, count: number, size: number, prefix: string) {
  return Array.from({ length: count }, (_, index) => {
    const on = servers[index % servers.length]!;
    const content = pngLike(size + index);
    return size <= 16 * KiB
      ? uploadJson(on, team.teamId, team.key, { file: content.toString('base64'), fileName: `${prefix}${index}.png` })
      : uploadMultipart(on, team.teamId, team.key, { content, fileName: `${prefix}${index}.png` });
  });
}

t.test('a mixed burst of small and large files across two instances never passes the limit and counts exactly what is stored', async (t: Test) => {
  const second = await startTestServer(t, { settings, databaseUrl: server.databaseUrl, dataDir: server.dataDir });
  const team = await server.createTeam('Mixed');
  const limitKiB = 900;
  t.equal((await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxTeamStorage: limitKiB })).status, 200);
  const responses = await Promise.all([...burst([server, second], team, 60, 8 * KiB, 's'), ...burst([second, server], team, 12, 100 * KiB, 'l')]);
  t.ok(responses.every((response) => response.status === 201 || response.status === 402), 'each landed or got 402');
  const landed = responses.filter((response) => response.status === 201);
  t.ok(landed.length > 0 && landed.length < responses.length, 'some landed, some did not fit');
  const state = await teamStorageState(server.databaseUrl, team.teamId);
  const sizes = landed.map((response) => Number(response.body.size));
  const sum = sizes.reduce((total, size) => total + size, 0);
  t.equal(state.usedStorage, sum, 'the counter equals the sum of the stored files');
  t.ok(sum <= limitKiB * 1024, 'the limit holds');
  t.equal(state.files, landed.length);
  t.equal(state.reservedStorage, 0);
  t.equal(await contentRows(team.teamId), sizes.filter((size) => size <= 16 * KiB).length, 'the small ones are in the database');
  t.equal((await storeFiles(team.teamId)).length, sizes.filter((size) => size > 64 * KiB).length, 'the large ones in the object store, and nothing else');
  await access(join(server.dataDir, 'files'));
});

t.test('a small upload with an Idempotency-Key commits its bytes with its answer; the retry stores nothing', async (t) => {
  const team = await server.createTeam('Keyed');
  const body = { file: logText(4 * KiB).toString('base64'), fileName: 'keyed.log' };
  const headers = { 'idempotency-key': 'small-file-retry-1' };
  const first = await server.media('POST', `/v1/cdn/media/${team.teamId}/upload`, team.key, { body, headers });
  t.equal(first.status, 201);
  t.equal((await placeOf(first.body.id)).location, 'db');
  const retry = await server.media('POST', `/v1/cdn/media/${team.teamId}/upload`, team.key, { body, headers });
  t.equal(retry.status, 201);
  t.equal(retry.body.id, first.body.id, 'the retry answers the first upload');
  t.equal(await contentRows(team.teamId), 1, 'and stores no second copy');
  t.equal((await teamStorageState(server.databaseUrl, team.teamId)).usedStorage, 4 * KiB);
});
