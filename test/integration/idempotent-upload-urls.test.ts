// Idempotency-Key on the two upload URL routes, against a real server and PostgreSQL: creating a URL
// (a retry gets the same URL, no second row; 422 for another body; 400 for an invalid key; a failed
// creation does not hold the key) and using one (a retry after a lost answer replays the first
// answer instead of 410 used, nothing counted twice; the key on another URL is 422; a failed use
// does not hold the key nor the URL).
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { holdTeamCommits, sendAndLoseAnswer } from '../helpers/commit-hold.ts';
import { connectPg } from '../helpers/database.ts';
import { expectError, startTestServer, type CreatedTeam } from '../helpers/server.ts';
import { settledObjects } from '../helpers/storage.ts';
import { createUploadUrl, postToUrl } from '../helpers/upload-urls.ts';
import { expectNothingCounted, KiB, multipartBody, pngLike, send, teamStorageState, uploadPath } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000, UPLOAD_URL_TEAM_RATE_LIMIT_POINTS: 100_000 } });
const db = await connectPg(server.databaseUrl);
t.teardown(() => db.end());

const CREATE_ROUTE = '/v1/cdn/media/:teamId/upload-urls';
const USE_ROUTE = '/v1/cdn/media/:teamId/upload-urls/:urlId';
const urlsPath = (teamId: string) => `/v1/cdn/media/${teamId}/upload-urls`;
const urlIdOf = (url: string) => new URL(url).pathname.split('/').pop()!;

function createKeyed(team: CreatedTeam, key: string, body: Record<string, unknown>) {
  return server.media('POST', urlsPath(team.teamId), team.key, { body, headers: { 'idempotency-key': key } });
}

/** A raw PNG body to `url`, with an Idempotency-Key. */
function useKeyed(url: string, key: string, content: Buffer) {
  return postToUrl(url, content, { 'content-type': 'image/png', 'idempotency-key': key });
}

async function urlRows(teamId: string) {
  return (await db.query<{ id: string; state: string; media_id: string | null }>('select id, state, media_id from upload_url where team_id = $1 order by created_at', [teamId])).rows;
}

async function keyRows(teamId: string) {
  return (await db.query<{ key: string; route: string; state: string }>('select key, route, state from idempotency_key where team_id = $1 order by key', [teamId])).rows;
}

async function counter(name: string, labels = ''): Promise<number> {
  const text = await server.app.services.metrics.registry.metrics();
  const line = text.split('\n').find((candidate) => candidate.startsWith(labels ? `${name}{${labels}}` : `${name} `));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

t.test('creating: a retry with the key gets the same URL and makes no second row; another body is 422', async (t) => {
  const team = await server.createTeam('CreateKeyed');
  const key = `create-${randomUUID()}`;
  const replaysBefore = await counter('media_idempotent_replays_total', `route="${CREATE_ROUTE}"`);
  const createdBefore = await counter('media_upload_urls_created_total');

  const first = await createKeyed(team, key, { fileName: 'c.png', folder: 'crashes', tags: ['a', 'b'], maxSizeBytes: 5000 });
  t.equal(first.status, 201);
  t.equal(first.headers.get('idempotent-replayed'), null, 'a first answer is not marked');
  // The same members in another order: the same request.
  const again = await createKeyed(team, key, { maxSizeBytes: 5000, tags: ['a', 'b'], folder: 'crashes', fileName: 'c.png' });
  t.equal(again.status, 201);
  t.equal(again.headers.get('idempotent-replayed'), 'true', 'marked replayed');
  t.same(again.body, first.body, 'the first answer again: the same url, expiry and size');
  t.equal(again.headers.get('cache-control'), 'no-store', 'a replayed URL is not cached either');
  t.ok(again.headers.get('ratelimit-remaining'), 'with this request\'s RateLimit headers');
  t.same((await urlRows(team.teamId)).map((row) => row.id), [urlIdOf(first.body.url)], 'one row: the retry made no second URL');
  t.equal(await counter('media_upload_urls_created_total') - createdBefore, 1, 'one URL counted as created');
  t.equal(await counter('media_idempotent_replays_total', `route="${CREATE_ROUTE}"`) - replaysBefore, 1, 'the replay is counted under the route');

  expectError(t, await createKeyed(team, key, { fileName: 'c.png', folder: 'crashes', tags: ['a', 'b'], maxSizeBytes: 6000 }), 422, 'error.media.idempotencyKeyReused');
  expectError(t, await createKeyed(team, key, {}), 422, 'error.media.idempotencyKeyReused');
  t.equal((await urlRows(team.teamId)).length, 1, 'a reused key makes no URL');

  // The replayed URL is the URL: it uploads once.
  const used = await postToUrl(again.body.url, pngLike(2 * KiB), { 'content-type': 'image/png' });
  t.equal(used.status, 201);
  t.same({ fileName: used.body.fileName, tags: used.body.tags, folderSet: typeof used.body.folderId === 'string' }, { fileName: 'c.png', tags: ['a', 'b'], folderSet: true }, 'under the options the URL fixed');

  const other = await server.createTeam('CreateKeyedOther');
  const elsewhere = await createKeyed(other, key, { folder: 'crashes', tags: ['a', 'b'], maxSizeBytes: 5000 });
  t.equal(elsewhere.status, 201, 'another team\'s key of the same name is its own');
  t.equal(elsewhere.headers.get('idempotent-replayed'), null);
  t.not(elsewhere.body.url, first.body.url);
});

t.test('creating: an invalid key is 400 and makes nothing; a failed creation does not hold the key', async (t) => {
  const team = await server.createTeam('CreateFail');
  for (const bad of ['', 'x'.repeat(256), 'tab\there']) {
    const response = await server.media('POST', urlsPath(team.teamId), team.key, { body: {}, headers: { 'idempotency-key': bad } });
    expectError(t, response, 400, 'error.badRequest');
  }
  t.equal((await urlRows(team.teamId)).length, 0, 'no URL made');
  t.same(await keyRows(team.teamId), [], 'no key claimed');

  const key = 'create-fail-1';
  const missingFolder = { folderId: randomUUID() };
  expectError(t, await createKeyed(team, key, missingFolder), 404, 'error.notFound');
  t.same(await keyRows(team.teamId), [], 'the 404 freed the key');
  expectError(t, await createKeyed(team, key, missingFolder), 404, 'error.notFound');
  expectError(t, await createKeyed(team, key, { tags: ['no spaces allowed here'] }), 400, 'error.badRequest');
  t.same(await keyRows(team.teamId), [], 'the 400 freed the key');

  const created = await createKeyed(team, key, { folder: 'later' });
  t.equal(created.status, 201, 'the key is free for a request that works');
  t.equal(created.headers.get('idempotent-replayed'), null);
  t.same((await keyRows(team.teamId)).map((row) => row.state), ['completed']);
  t.equal((await urlRows(team.teamId)).length, 1);
});

t.test('using: a retry after the answer was lost replays the first answer; nothing is stored or counted twice', async (t) => {
  const team = await server.createTeam('UseLost');
  const { url } = await createUploadUrl(server, team.teamId, team.key, { fileName: 'lost.png', tags: ['lost'] });
  const content = pngLike(20 * KiB);
  const key = `use-${randomUUID()}`;
  const usedBefore = await counter('media_upload_urls_used_total');
  const replaysBefore = await counter('media_idempotent_replays_total', `route="${USE_ROUTE}"`);

  const hold = await holdTeamCommits(server.databaseUrl, team.teamId);
  const target = new URL(url);
  await sendAndLoseAnswer(
    t, server.app.port,
    `POST ${target.pathname}${target.search} HTTP/1.1\r\nHost: x\r\nIdempotency-Key: ${key}\r\n` +
      `Content-Type: image/png\r\nContent-Length: ${content.length}\r\n\r\n`,
    content, hold,
  );

  let listed: any;
  t.ok(
    await eventually(async () => {
      listed = (await server.media('GET', `/v1/cdn/media/${team.teamId}`, team.key)).body;
      return listed.totalCount === 1 && listed.media.length === 1;
    }),
    'the upload was committed although its answer was lost',
  );
  t.ok(await eventually(async () => (await urlRows(team.teamId))[0]?.state === 'used'), 'and the URL is used');
  const before = await teamStorageState(server.databaseUrl, team.teamId);

  const retry = await useKeyed(url, key, content);
  t.equal(retry.status, 201, 'the retry answers 201, not 410 used');
  t.equal(retry.headers.get('idempotent-replayed'), 'true', 'marked replayed');
  t.equal(retry.body.id, listed.media[0].id, 'with the media id of the stored file');
  t.same(retry.body.tags, ['lost']);
  t.equal(retry.body.usedTeamStorage, content.length, 'and the first answer\'s usedTeamStorage');
  t.equal(retry.headers.get('cache-control'), 'no-store');

  t.same(await teamStorageState(server.databaseUrl, team.teamId), before, 'nothing more stored or counted');
  t.equal((await settledObjects('fs', server.dataDir, team.teamId, 1)).objects.length, 1, 'one object in storage');
  t.same(await urlRows(team.teamId), [{ id: urlIdOf(url), state: 'used', media_id: retry.body.id }], 'the URL records the one file');
  t.equal(await counter('media_upload_urls_used_total') - usedBefore, 1, 'one use counted');
  t.equal(await counter('media_idempotent_replays_total', `route="${USE_ROUTE}"`) - replaysBefore, 1, 'the replay is counted under the route');

  expectError(t, await postToUrl(url, content, { 'content-type': 'image/png' }), 410, 'error.media.uploadUrlUsed');
  expectError(t, await useKeyed(url, `other-${key}`, content), 410, 'error.media.uploadUrlUsed');
  expectError(t, await useKeyed(url, key, pngLike(21 * KiB)), 422, 'error.media.idempotencyKeyReused');
  t.same(await teamStorageState(server.databaseUrl, team.teamId), before, 'the refusals stored nothing');
});

t.test('using: the key of one URL\'s use on another URL is 422 and leaves that URL usable', async (t) => {
  const team = await server.createTeam('UseOther');
  const first = await createUploadUrl(server, team.teamId, team.key, { fileName: 'a.png' });
  const second = await createUploadUrl(server, team.teamId, team.key, { fileName: 'a.png' });
  const content = pngLike(3 * KiB);
  const key = 'use-other-1';
  const stored = await useKeyed(first.url, key, content);
  t.equal(stored.status, 201);
  t.equal(stored.headers.get('idempotent-replayed'), null, 'a first use is not marked');
  const refusedBefore = await counter('media_upload_urls_refused_total', 'reason="idempotency"');

  const state = await teamStorageState(server.databaseUrl, team.teamId);
  expectError(t, await useKeyed(second.url, key, content), 422, 'error.media.idempotencyKeyReused');
  await expectNothingCounted(t, server, team.teamId, state);
  t.equal((await urlRows(team.teamId)).find((row) => row.id === urlIdOf(second.url))?.state, 'open', 'the other URL was not claimed');
  t.equal(await counter('media_upload_urls_refused_total', 'reason="idempotency"') - refusedBefore, 1, 'counted as refused for the key');

  const form = multipartBody([{ content, fileName: 'a.png', contentType: 'image/png' }]);
  const teamKey = await send(server, 'POST', uploadPath(team.teamId), team.key, form.body, { 'idempotency-key': key, 'content-type': form.contentType });
  expectError(t, teamKey, 422, 'error.media.idempotencyKeyReused');

  const plain = await postToUrl(second.url, content, { 'content-type': 'image/png' });
  t.equal(plain.status, 201, 'the other URL still uploads');
  t.not(plain.body.id, stored.body.id);
});

t.test('using: an invalid key is 400 before the URL is claimed; a failed use holds neither the key nor the URL', async (t) => {
  const team = await server.createTeam('UseFail');
  const { url } = await createUploadUrl(server, team.teamId, team.key, { fileName: 'shot.png', maxSizeBytes: 4 * KiB });
  const state = await teamStorageState(server.databaseUrl, team.teamId);

  expectError(t, await useKeyed(url, 'x'.repeat(256), pngLike(2 * KiB)), 400, 'error.badRequest');
  t.equal((await urlRows(team.teamId))[0]!.state, 'open', 'an invalid key claims nothing');

  const key = 'use-fail-1';
  const tooLarge = await useKeyed(url, key, pngLike(8 * KiB));
  expectError(t, tooLarge, 413, 'error.payloadTooLarge');
  await expectNothingCounted(t, server, team.teamId, state);
  t.same(await keyRows(team.teamId), [], 'the 413 freed the key');
  t.equal((await urlRows(team.teamId))[0]!.state, 'open', 'and the URL');

  const content = pngLike(3 * KiB);
  const stored = await useKeyed(url, key, content);
  t.equal(stored.status, 201, 'the key and the URL work for the next attempt');
  t.equal(stored.headers.get('idempotent-replayed'), null);
  const replayed = await useKeyed(url, key, content);
  t.equal(replayed.headers.get('idempotent-replayed'), 'true');
  t.equal(replayed.body.id, stored.body.id);
  t.equal((await teamStorageState(server.databaseUrl, team.teamId)).files, 1, 'one file');
});
