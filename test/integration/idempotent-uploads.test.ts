// Idempotent uploads (Idempotency-Key) on both upload routes: a retry after a lost answer replays
// the first answer and stores nothing more; 409 while the first runs (also on another instance);
// 422 for another request under the key; failed requests (503, 402) do not hold it; invalid keys
// 400; keys swept after 24 hours; a claim of a dead instance does not hold its key.
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import t from 'tap';
import { fingerprintOf } from '../../src/uploads/idempotency/idempotency-key.ts';
import { parseMultipartOptions } from '../../src/uploads/options/upload-options.ts';
import { holdTeamCommits, sendAndLoseAnswer } from '../helpers/commit-hold.ts';
import { createTeam as createCrashTeam, prepareInstance, startService } from '../helpers/crashed-instance.ts';
import { connectPg } from '../helpers/database.ts';
import { assertAnswer } from '../helpers/openapi-answers.ts';
import { RawConnection } from '../helpers/raw-connection.ts';
import { expectError, startTestServer, type ApiResponse, type CreatedTeam, type TestServer } from '../helpers/server.ts';
import { closeS3Client, DRIVERS_OF_THIS_PASS, driverSettings, settledObjects } from '../helpers/storage.ts';
import { KiB, multipartBody, pngLike, send, sendChunked, teamStorageState, uploadPath } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';

t.teardown(() => closeS3Client());

const MULTIPART_ROUTE = '/v1/cdn/media/:teamId/upload/file';

function keyed(key: string, headers: Record<string, string> = {}): Record<string, string> {
  return { 'idempotency-key': key, ...headers };
}

/** A multipart upload with an Idempotency-Key; each call frames the body with a boundary of its own. */
function uploadKeyed(server: TestServer, team: CreatedTeam, key: string, content: Buffer, options: { fileName?: string; query?: string } = {}): Promise<ApiResponse> {
  const { body, contentType } = multipartBody([{ content, fileName: options.fileName ?? 'shot.png', contentType: 'image/png' }], {}, `----b${randomUUID()}`);
  return send(server, 'POST', uploadPath(team.teamId, options.query), team.key, body, keyed(key, { 'content-type': contentType }));
}

function jsonKeyed(server: TestServer, team: CreatedTeam, key: string, body: Record<string, unknown>): Promise<ApiResponse> {
  return send(server, 'POST', `/v1/cdn/media/${team.teamId}/upload`, team.key, Buffer.from(JSON.stringify(body)), keyed(key, { 'content-type': 'application/json' }));
}

async function keyRows(server: TestServer, teamId: string): Promise<{ key: string; state: string; body: string | null }[]> {
  const client = await connectPg(server.databaseUrl);
  try {
    return (await client.query('select key, state, body from idempotency_key where team_id = $1 order by key', [teamId])).rows;
  } finally {
    await client.end();
  }
}

async function metricsText(server: TestServer): Promise<string> {
  return server.app.services.metrics.registry.metrics();
}

function counterValue(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name}{${labels}}`));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

for (const driver of DRIVERS_OF_THIS_PASS) {
  t.test(`${driver}: a retry after the answer was lost replays the first answer and stores nothing more`, async (t) => {
    const server = await startTestServer(t, { settings: driverSettings(driver) });
    const team = await server.createTeam(`Lost${driver}`);
    const content = pngLike(20 * KiB);
    const key = `lost-${randomUUID()}`;

    const hold = await holdTeamCommits(server.databaseUrl, team.teamId);
    const { body, contentType } = multipartBody([{ content, fileName: 'lost.png', contentType: 'image/png' }]);
    await sendAndLoseAnswer(
      t, server.app.port,
      `POST ${uploadPath(team.teamId, 'tags=lost')} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${team.key}\r\nIdempotency-Key: ${key}\r\n` +
        `Content-Type: ${contentType}\r\nContent-Length: ${body.length}\r\n\r\n`,
      body, hold,
    );

    let listed: any;
    t.ok(
      await eventually(async () => {
        listed = (await server.media('GET', `/v1/cdn/media/${team.teamId}`, team.key)).body;
        return listed.totalCount === 1 && listed.media.length === 1;
      }),
      'the upload was committed although its answer was lost',
    );
    const before = await teamStorageState(server.databaseUrl, team.teamId);

    const retry = await uploadKeyed(server, team, key, content, { fileName: 'lost.png', query: 'tags=lost' });
    t.equal(retry.status, 201, 'the retry answers 201');
    t.equal(retry.headers.get('idempotent-replayed'), 'true', 'marked replayed');
    t.equal(retry.body.id, listed.media[0].id, 'with the media id of the stored file');
    t.equal(retry.body.usedTeamStorage, content.length, 'and the first answer\'s usedTeamStorage');
    const [row] = await keyRows(server, team.teamId);
    t.equal(JSON.stringify(retry.body), row!.body, 'the body is the recorded answer, byte for byte');

    t.same(await teamStorageState(server.databaseUrl, team.teamId), before, 'nothing more stored or counted');
    t.equal((await settledObjects(driver, server.dataDir, team.teamId, 1)).objects.length, 1, 'one object in storage');
    t.equal(counterValue(await metricsText(server), 'media_idempotent_replays_total', `route="${MULTIPART_ROUTE}"`), 1, 'the replay is counted');
  });
}

t.test('the same key and request replays; another route, options or content answers 422 and stores nothing', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('Reuse');
  const other = await server.createTeam('ReuseOther');
  const content = pngLike(3 * KiB);

  const key = 'multipart-key-1';
  const first = await uploadKeyed(server, team, key, content, { query: 'tags=a,b&public=false' });
  t.equal(first.status, 201);
  t.equal(first.headers.get('idempotent-replayed'), null, 'a first answer is not marked');
  // The same options in another order, the same file in another multipart framing: the same request.
  const again = await uploadKeyed(server, team, key, content, { query: 'public=false&tags=a,b' });
  t.equal(again.status, 201);
  t.equal(again.headers.get('idempotent-replayed'), 'true');
  t.same(again.body, first.body, 'the first answer again');

  const state = await teamStorageState(server.databaseUrl, team.teamId);
  expectError(t, await uploadKeyed(server, team, key, content, { query: 'tags=a,c&public=false' }), 422, 'error.media.idempotencyKeyReused');
  expectError(t, await uploadKeyed(server, team, key, pngLike(3 * KiB), { query: 'tags=a,b&public=false' }), 422, 'error.media.idempotencyKeyReused');
  expectError(t, await uploadKeyed(server, team, key, content, { query: 'tags=a,b&public=false', fileName: 'renamed.png' }), 422, 'error.media.idempotencyKeyReused');
  expectError(t, await jsonKeyed(server, team, key, { fileName: 'shot.png', file: content.toString('base64') }), 422, 'error.media.idempotencyKeyReused');
  t.same(await teamStorageState(server.databaseUrl, team.teamId), state, 'a reused key stores and counts nothing');

  const jsonKey = 'json-key-1';
  const request = { fileName: 'note.txt', tags: ['x'], file: `data:text/plain;base64,${Buffer.from('hello').toString('base64')}` };
  const created = await jsonKeyed(server, team, jsonKey, request);
  t.equal(created.status, 201);
  const replayed = await jsonKeyed(server, team, jsonKey, { file: request.file, tags: ['x'], fileName: 'note.txt' });
  t.equal(replayed.headers.get('idempotent-replayed'), 'true', 'JSON members in another order: the same request');
  t.equal(replayed.body.id, created.body.id);
  expectError(t, await jsonKeyed(server, team, jsonKey, { ...request, tags: ['y'] }), 422, 'error.media.idempotencyKeyReused');
  expectError(t, await jsonKeyed(server, team, jsonKey, { ...request, public: true }), 422, 'error.media.idempotencyKeyReused');
  expectError(t, await jsonKeyed(server, team, jsonKey, { ...request, file: Buffer.from('other').toString('base64') }), 422, 'error.media.idempotencyKeyReused');
  t.equal((await teamStorageState(server.databaseUrl, team.teamId)).files, 2, 'two uploads, two files');

  const elsewhere = await uploadKeyed(server, other, key, content, { query: 'tags=a,b&public=false' });
  t.equal(elsewhere.status, 201, 'another team\'s key of the same name is its own');
  t.equal(elsewhere.headers.get('idempotent-replayed'), null);
  t.not(elsewhere.body.id, first.body.id);

  const metrics = await metricsText(server);
  t.equal(counterValue(metrics, 'media_idempotency_conflicts_total', `route="${MULTIPART_ROUTE}",reason="key_reused"`), 3, '422s counted by route');
});

/** A multipart upload with a key whose body is held half-sent until finish(). */
function heldKeyedUpload(server: TestServer, team: CreatedTeam, key: string, content: Buffer) {
  const { body, contentType } = multipartBody([{ content, fileName: 'race.png', contentType: 'image/png' }]);
  const request = httpRequest(`${server.baseUrl}${uploadPath(team.teamId)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${team.key}`, 'content-type': contentType, 'content-length': String(body.length), 'idempotency-key': key },
  });
  const response = new Promise<{ status: number; body: any; replayed: string | undefined }>((resolve, reject) => {
    request.on('response', (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => {
        assertAnswer({ method: 'POST', path: uploadPath(team.teamId), status: res.statusCode ?? 0, contentType: res.headers['content-type'] ?? null, text });
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), replayed: res.headers['idempotent-replayed'] as string | undefined });
      });
    });
    request.on('error', reject);
  });
  const half = Math.floor(body.length / 2);
  request.write(body.subarray(0, half));
  return { response, finish: () => request.end(body.subarray(half)) };
}

t.test('two instances: a duplicate while the first runs answers 409; racing duplicates store one file', async (t) => {
  const settings = { ...driverSettings('s3'), RATE_LIMIT_POINTS: 100_000 };
  const first = await startTestServer(t, { settings });
  const second = await startTestServer(t, { settings, databaseUrl: first.databaseUrl });
  const team = await first.createTeam('TwoKeys');
  const content = pngLike(64 * KiB);

  const held = heldKeyedUpload(first, team, 'race-1', content);
  t.ok(await eventually(async () => (await keyRows(first, team.teamId)).length === 1), 'the first request holds the key');
  const duplicate = await uploadKeyed(second, team, 'race-1', content, { fileName: 'race.png' });
  expectError(t, duplicate, 409, 'error.media.idempotencyInFlight');
  t.equal(duplicate.headers.get('retry-after'), '1', 'with Retry-After');
  held.finish();
  const stored = await held.response;
  t.equal(stored.status, 201);
  const retried = await uploadKeyed(second, team, 'race-1', content, { fileName: 'race.png' });
  t.equal(retried.status, 201);
  t.equal(retried.headers.get('idempotent-replayed'), 'true', 'the other instance replays once it completed');
  t.equal(retried.body.id, stored.body.id);
  t.equal(counterValue(await metricsText(second), 'media_idempotency_conflicts_total', `route="${MULTIPART_ROUTE}",reason="in_flight"`), 1, '409 counted');

  const burst = pngLike(32 * KiB);
  const answers = await Promise.all(
    Array.from({ length: 10 }, (_, i) => uploadKeyed(i % 2 === 0 ? first : second, team, 'race-2', burst, { fileName: 'burst.png' })),
  );
  const statuses = answers.map((answer) => answer.status);
  t.ok(statuses.every((status) => status === 201 || status === 409), `201 or 409 only (${statuses.join(',')})`);
  const created = answers.filter((answer) => answer.status === 201);
  t.equal(created.filter((answer) => answer.headers.get('idempotent-replayed') === null).length, 1, 'exactly one stored');
  t.equal(new Set(created.map((answer) => answer.body.id)).size, 1, 'every 201 names the same file');
  t.equal((await teamStorageState(first.databaseUrl, team.teamId)).files, 2, 'one file per key');
  t.equal((await settledObjects('s3', first.dataDir, team.teamId, 2)).objects.length, 2, 'and one object per key');
});

t.test('a request that failed does not hold its key: retries after a 503 and after a 402 run', async (t) => {
  const server = await startTestServer(t, { settings: { UPLOAD_CONCURRENCY: 1, UPLOAD_QUEUE_LIMIT: 0, UPLOAD_RETRY_AFTER_SECONDS: 1 } });
  const team = await server.createTeam('Failures');
  const content = pngLike(4 * KiB);

  const blocker = heldKeyedUpload(server, team, 'blocker', pngLike(KiB));
  t.ok(await eventually(() => server.app.services.gate.running === 1), 'the only slot is taken');
  expectError(t, await uploadKeyed(server, team, 'busy-1', content), 503, 'error.media.uploadBusy');
  t.same((await keyRows(server, team.teamId)).map((row) => row.key), ['blocker'], 'the refused request left no key');
  blocker.finish();
  t.equal((await blocker.response).status, 201);
  const afterBusy = await uploadKeyed(server, team, 'busy-1', content);
  t.equal(afterBusy.status, 201, 'the retry runs');
  t.equal(afterBusy.headers.get('idempotent-replayed'), null, 'as a first request');

  const full = await server.createTeam('FullTeam');
  t.equal((await server.admin('PATCH', `/v1/admin/teams/${full.teamId}/limits`, { maxTeamStorage: 2 })).status, 200);
  const before = await teamStorageState(server.databaseUrl, full.teamId);
  expectError(t, await uploadKeyed(server, full, 'full-1', content), 402, 'error.teamLimits.maxTeamStorage');
  // Chunked: no Content-Length, so the limit stops it mid-body, after the key was claimed and bytes were stored.
  const midBody = await sendChunkedUpload(server, full, 'full-3', pngLike(600 * KiB));
  t.equal(midBody.status, 402, 'refused while streaming');
  t.equal(midBody.body.messageKey, 'error.teamLimits.maxTeamStorage');
  t.same(await keyRows(server, full.teamId), [], 'no refused request holds its key');
  t.same(await teamStorageState(server.databaseUrl, full.teamId), before, 'nothing stored');

  t.equal((await server.admin('PATCH', `/v1/admin/teams/${full.teamId}/limits`, { maxTeamStorage: 10_000 })).status, 200);
  const afterLimit = await uploadKeyed(server, full, 'full-1', content);
  t.equal(afterLimit.status, 201, 'once there is room the retry stores the file');
  t.equal(afterLimit.headers.get('idempotent-replayed'), null);
  const afterStream = await sendChunkedUpload(server, full, 'full-3', pngLike(600 * KiB));
  t.equal(afterStream.status, 201, 'so does the retry of the one refused mid-body');
});

/** A multipart upload sent chunked (no Content-Length), with an Idempotency-Key. */
async function sendChunkedUpload(server: TestServer, team: CreatedTeam, key: string, content: Buffer) {
  const boundary = `----c${randomUUID()}`;
  const prefix = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.png"\r\nContent-Type: image/png\r\n\r\n`);
  const suffix = Buffer.from(`\r\n--${boundary}--\r\n`);
  const answer = await sendChunked(
    `${server.baseUrl}${uploadPath(team.teamId)}`,
    { authorization: `Bearer ${team.key}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'idempotency-key': key },
    content.length, Buffer.concat([prefix, content.subarray(0, 16 * KiB)]), content.subarray(16 * KiB, 32 * KiB), suffix,
  );
  assertAnswer({ method: 'POST', path: uploadPath(team.teamId), status: answer.status, contentType: 'application/json', text: JSON.stringify(answer.body) });
  return answer;
}

t.test('an invalid Idempotency-Key answers 400 and leaves nothing', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('BadKeys');
  const content = pngLike(KiB);
  for (const [label, key] of [['empty', ''], ['256 characters', 'k'.repeat(256)]] as const) {
    const answer = await uploadKeyed(server, team, key, content);
    expectError(t, answer, 400, 'error.badRequest');
    t.equal(answer.body.value, 'Idempotency-Key', `${label}: the error names the header`);
  }
  t.equal((await uploadKeyed(server, team, 'k'.repeat(255), content)).status, 201, '255 characters are fine');
  t.equal((await uploadKeyed(server, team, ' ~!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}', content)).status, 201, 'any printable ASCII is fine');

  // Bytes node:http will not send: a UTF-8 key and a tab inside the value.
  for (const [label, value] of [['non-ASCII', Buffer.from('clé-ü', 'utf8').toString('latin1')], ['a tab', 'a\tb']] as const) {
    const { body, contentType } = multipartBody([{ content, fileName: 'raw.png', contentType: 'image/png' }]);
    const connection = await RawConnection.open(server.app.port);
    connection.write(
      `POST ${uploadPath(team.teamId)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${team.key}\r\nIdempotency-Key: ${value}\r\n` +
        `Content-Type: ${contentType}\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    connection.write(body);
    const answer = await connection.next();
    connection.destroy();
    t.equal(answer.status, 400, `${label}: 400`);
    t.equal(answer.json?.value, 'Idempotency-Key', `${label}: names the header`);
    assertAnswer({ method: 'POST', path: uploadPath(team.teamId), status: answer.status, contentType: answer.headers['content-type'] ?? null, text: answer.body.toString() });
  }
  t.equal((await teamStorageState(server.databaseUrl, team.teamId)).files, 2, 'only the two valid keys stored');
  t.equal((await keyRows(server, team.teamId)).length, 2, 'and only they are kept');
});

t.test('keys are kept 24 hours, then swept; the key is then free for a new upload', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('Sweep');
  const content = pngLike(2 * KiB);
  const first = await uploadKeyed(server, team, 'day-1', content);
  t.equal(first.status, 201);

  const sweeper = server.app.services.crashSweeper;
  await sweeper.runOnce(new Date(Date.now() + 23 * 3_600_000));
  t.equal((await keyRows(server, team.teamId)).length, 1, 'kept at 23 hours');
  const replay = await uploadKeyed(server, team, 'day-1', content);
  t.equal(replay.headers.get('idempotent-replayed'), 'true', 'and still replayed');

  await sweeper.runOnce(new Date(Date.now() + 24 * 3_600_000 + 60_000));
  t.same(await keyRows(server, team.teamId), [], 'swept after 24 hours');
  const fresh = await uploadKeyed(server, team, 'day-1', content);
  t.equal(fresh.status, 201);
  t.equal(fresh.headers.get('idempotent-replayed'), null, 'a swept key starts a new upload');
  t.not(fresh.body.id, first.body.id);
  t.equal((await teamStorageState(server.databaseUrl, team.teamId)).files, 2);
});

t.test('a running claim holds its key only while its process lives', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('Claims');
  const content = pngLike(2 * KiB);
  const identity = server.app.services.identity!;
  // What a multipart upload without options claims its key with (src/uploads/upload-use-case.ts).
  const requestFingerprint = fingerprintOf({ options: parseMultipartOptions(new URLSearchParams()) });
  const client = await connectPg(server.databaseUrl);
  t.teardown(() => client.end());
  const plant = (key: string, instanceId: string, bootId: string) =>
    client.query(
      `insert into idempotency_key (team_id, key, route, request_fingerprint, state, claim_id, instance_id, boot_id, created_at, expires_at)
       values ($1, $2, 'POST ${MULTIPART_ROUTE}', $6, 'running', $3, $4, $5, now(), now() + interval '24 hours')`,
      [team.teamId, key, randomUUID(), instanceId, bootId, requestFingerprint],
    );

  await plant('live', identity.instanceId, identity.bootId);
  expectError(t, await uploadKeyed(server, team, 'live', content), 409, 'error.media.idempotencyInFlight');

  await plant('earlier-start', identity.instanceId, randomUUID());
  t.equal((await uploadKeyed(server, team, 'earlier-start', content)).status, 201, 'a claim of an earlier start of this instance is taken over');

  await plant('gone-instance', 'an-instance-that-is-gone', randomUUID());
  t.equal((await uploadKeyed(server, team, 'gone-instance', content)).status, 201, 'a claim of an instance holding no lock is taken over');

  await plant('swept-claim', identity.instanceId, randomUUID());
  await server.app.services.crashSweeper.runOnce();
  t.same((await keyRows(server, team.teamId)).map((row) => row.key), ['earlier-start', 'gone-instance', 'live'], 'the sweep frees an earlier start\'s claims');
});

t.test('an upload whose claim was taken over meanwhile is not committed', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('TakenOver');
  const held = heldKeyedUpload(server, team, 'taken-1', pngLike(64 * KiB));
  t.ok(await eventually(async () => (await keyRows(server, team.teamId)).length === 1), 'the upload holds its key');
  const pg = await connectPg(server.databaseUrl);
  t.teardown(() => pg.end());
  // As a retry on another instance does when it judged this claim's process gone.
  await pg.query(`update idempotency_key set claim_id = gen_random_uuid() where team_id = $1`, [team.teamId]);
  held.finish();
  const answer = await held.response;
  t.equal(answer.status, 409, 'the commit refuses it');
  t.equal(answer.body.messageKey, 'error.media.idempotencyInFlight');
  t.equal((await teamStorageState(server.databaseUrl, team.teamId)).files, 0, 'nothing committed');
  t.equal((await settledObjects('fs', server.dataDir, team.teamId, 0)).objects.length, 0, 'its bytes removed');
  t.same((await keyRows(server, team.teamId)).map((row) => row.state), ['running'], 'the claim that took over is left alone');
});

t.test('OpenAPI: both upload routes describe the header, 409, 422 and Idempotent-Replayed', async (t) => {
  const server = await startTestServer(t);
  const document = (await server.request('GET', '/v1/openapi.json')).body;
  t.match(document.components.parameters.IdempotencyKey, { in: 'header', name: 'Idempotency-Key', schema: { maxLength: 255 } });
  for (const path of ['/v1/cdn/media/{teamId}/upload/file', '/v1/cdn/media/{teamId}/upload']) {
    const operation = document.paths[path].post;
    t.match(JSON.stringify(operation.parameters), /#\/components\/parameters\/IdempotencyKey/, `${path}: the request header`);
    t.ok(operation.responses['409'] && operation.responses['422'], `${path}: 409 and 422`);
    t.match(JSON.stringify(operation.responses['409'].headers), /RetryAfter/, `${path}: 409 with Retry-After`);
    t.match(JSON.stringify(operation.responses['201'].headers), /Idempotent-Replayed/, `${path}: the answer header`);
  }
});


t.test('a claim left by a killed instance does not hold its key: the retry on another instance stores the file', async (t) => {
  const instance = await prepareInstance(t, 'fs', '');
  const killed = await startService(t, instance);
  const team = await createCrashTeam(killed.port, 'KilledClaim');
  const content = pngLike(64 * KiB);
  const { body, contentType } = multipartBody([{ content, fileName: 'killed.png', contentType: 'image/png' }]);
  const held = httpRequest(`http://127.0.0.1:${killed.port}${uploadPath(team.teamId)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${team.key}`, 'content-type': contentType, 'content-length': String(body.length), 'idempotency-key': 'killed-1' },
  });
  held.on('error', () => undefined); // the server dies under it
  held.write(body.subarray(0, Math.floor(body.length / 2)));
  const pg = await connectPg(instance.databaseUrl);
  t.teardown(() => pg.end());
  const claims = async () => (await pg.query(`select state from idempotency_key where key = 'killed-1'`)).rows.map((row) => row.state);
  t.ok(await eventually(async () => (await claims()).length === 1), 'the upload holds its key');
  killed.child.kill('SIGKILL');
  await killed.exited;

  const survivor = await startTestServer(t, { databaseUrl: instance.databaseUrl });
  const apiTeam = { ...team, ownerId: '', keyId: '' };
  const statuses: number[] = [];
  let last: ApiResponse | undefined;
  t.ok(
    await eventually(async () => {
      last = await uploadKeyed(survivor, apiTeam, 'killed-1', content, { fileName: 'killed.png' });
      statuses.push(last.status);
      return last.status !== 409;
    }),
    'the key is free once the killed instance\'s session is gone',
  );
  t.equal(last?.status, 201, `the retry stores the file (answers: ${statuses.join(',')})`);
  t.equal(last?.headers.get('idempotent-replayed'), null, 'as a first request');
  t.same(await claims(), ['completed']);
  t.equal((await teamStorageState(instance.databaseUrl, team.teamId)).files, 1, 'one file');
});
