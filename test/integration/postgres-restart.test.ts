import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import type { Test } from 'tap';
import { connectPg } from '../helpers/database.ts';
import { startPostgresCluster } from '../helpers/postgres-cluster.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { heldUpload, KiB, MiB, pngLike, teamStorageState, uploadJson, uploadMultipart } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';

// Issue 6: PostgreSQL restarts under a running service. The test runs a PostgreSQL server of its
// own (never the shared one), starts the service in this process against it, stops the database
// while the service is idle and while an upload streams, and starts it again: clients get a 503
// in the spec's error body (no hang, no crash), and once the database is back the same process
// serves normally (its pool reconnects; its LISTEN connection for API-key invalidation too), with
// nothing counted for the uploads that failed and nothing left in storage.

const pg = await startPostgresCluster(t);
const server = await startTestServer(t, {
  databaseUrl: pg.url,
  // A small pool, so that a leaked connection shows: three leaks and nothing could reach the database.
  settings: { RATE_LIMIT_POINTS: 100_000, API_KEY_CACHE_SECONDS: 3600, CRASH_SWEEP_MIN_AGE_SECONDS: 1, DATABASE_POOL_SIZE: 3 },
});
const team = await server.createTeam('Restart', 'enterprise');
const listPath = `/v1/cdn/media/${team.teamId}`;

function expectUnavailable(t: Test, response: { status: number; body: any; headers?: Headers }, label: string) {
  t.equal(response.status, 503, `${label}: 503`);
  t.match(response.body, { name: 'ServiceUnavailableError', message: String, status: 503, messageKey: 'error.serviceUnavailable' }, `${label}: the spec error body`);
  if (response.headers) t.equal(response.headers.get('retry-after'), '5', `${label}: Retry-After`);
}

async function tempFiles(): Promise<string[]> {
  return readdir(join(server.dataDir, 'files', '.uploads')).catch(() => []);
}

async function objectFiles(): Promise<string[]> {
  return readdir(join(server.dataDir, 'files', 'media', team.teamId)).catch(() => []);
}

/** Pool connections checked out right now (none when the service is idle). */
async function busyConnections(): Promise<number> {
  const pool = (await (server.app.services.orm.em.getConnection() as unknown as { getNativeClient(): Promise<{ totalCount: number; idleCount: number }> }).getNativeClient());
  return pool.totalCount - pool.idleCount;
}

/** A list request that gives up after 10 s instead of hanging. */
async function listStatus(): Promise<number> {
  const response = await fetch(`${server.baseUrl}${listPath}`, { headers: { authorization: `Bearer ${team.key}` }, signal: AbortSignal.timeout(10_000) });
  await response.arrayBuffer();
  return response.status;
}

async function listening(): Promise<boolean> {
  const client = await connectPg(pg.url);
  try {
    const { rows } = await client.query(`select count(*)::int as n from pg_stat_activity where datname = 'media' and query ilike 'LISTEN%auth_changes%'`);
    return rows[0].n > 0;
  } finally {
    await client.end();
  }
}

t.test('the database stops while the service is idle: 503s, then normal service once it is back', async (t) => {
  t.equal((await uploadMultipart(server, team.teamId, team.key, { fileName: 'before.png', content: pngLike(10 * KiB) })).status, 201, 'uploads work before');
  const before = await teamStorageState(server.databaseUrl, team.teamId);

  t.same((await server.request('GET', '/healthz')).body, { status: 'ok', dependencies: { database: 'ok', storage: 'ok' } }, '/healthz names the database as up');
  await pg.stop('fast');
  // The health connection ends with the server, so the state changes without waiting for a poll.
  t.ok(await eventually(async () => (await server.request('GET', '/healthz')).status === 503, 3_000), '/healthz answers 503 within seconds of the database stopping');
  const health = await server.request('GET', '/healthz');
  expectUnavailable(t, health, '/healthz');
  t.equal(health.body.value, 'database', '/healthz names the database as down');
  t.match(health.body.message, /^Unavailable: database \(.+\)$/, 'and says why');
  expectUnavailable(t, await server.media('GET', listPath, team.key), 'list');
  expectUnavailable(t, await uploadMultipart(server, team.teamId, team.key, { fileName: 'down.png', content: pngLike(10 * KiB) }), 'multipart upload');
  expectUnavailable(t, await uploadJson(server, team.teamId, team.key, { file: pngLike(600 * KiB).toString('base64'), fileName: 'down.png' }), 'JSON upload');
  expectUnavailable(t, await server.admin('POST', '/v1/admin/teams', { name: 'Down' }), 'operator route');
  expectUnavailable(t, await server.media('GET', listPath, 'tws_0123456789abcdef_' + 'A'.repeat(43)), 'an uncached key');

  t.equal((await server.request('GET', '/healthz')).status, 503, '/healthz stays 503 while the database is down');

  await pg.start();
  const back = Date.now();
  t.ok(await eventually(async () => (await server.request('GET', '/healthz')).status === 200, 10_000), '/healthz answers 200 again once the database is back');
  t.ok(Date.now() - back < 5_000, 'within seconds (re-checked every second while down)', { ms: Date.now() - back });
  t.ok(await eventually(async () => (await server.media('GET', listPath, team.key)).status === 200, 10_000), 'the same process lists again');
  const after = await uploadMultipart(server, team.teamId, team.key, { fileName: 'after.png', content: pngLike(2 * MiB) });
  t.equal(after.status, 201, 'uploads work again without a restart');
  const state = await teamStorageState(server.databaseUrl, team.teamId);
  t.equal(state.files, before.files + 1, 'only the upload after the restart counted');
  t.equal(state.usedStorage, before.usedStorage + 2 * MiB);
  t.equal(state.usedStorage, state.sumOfSizes, 'the counter equals the sum of the files');
  t.equal(state.reservations, 0);
  t.equal(state.reservedStorage, 0);
  t.same(await tempFiles(), [], 'no temp file');
  t.equal((await objectFiles()).length, state.files, 'one object per file');
});

t.test('the database stops mid-upload: 503, and nothing counted or stored once it is back and swept', async (t) => {
  const before = await teamStorageState(server.databaseUrl, team.teamId);
  // 6 MiB, half sent: past 256 KiB, so the upload holds a reservation in the database.
  const held = heldUpload(server, team.teamId, team.key, pngLike(6 * MiB));
  t.ok(await eventually(async () => (await teamStorageState(server.databaseUrl, team.teamId)).reservations === 1, 10_000), 'the upload reserved storage');
  await pg.stop('fast');
  held.finish();
  const response = await held.response;
  expectUnavailable(t, response, 'the upload');
  t.same(await tempFiles(), [], 'the writer removed its temp file');

  await pg.start();
  // The release of the reservation failed with the database; the crash sweeper gives it back.
  await eventually(async () => (await server.media('GET', listPath, team.key)).status === 200, 10_000);
  await new Promise((resolve) => setTimeout(resolve, 1100)); // CRASH_SWEEP_MIN_AGE_SECONDS is 1
  await server.app.services.crashSweeper.runOnce();
  const state = await teamStorageState(server.databaseUrl, team.teamId);
  t.equal(state.files, before.files, 'no media row');
  t.equal(state.usedStorage, before.usedStorage, 'nothing counted');
  t.equal(state.reservedStorage, 0, 'no storage reserved');
  t.equal(state.reservations, 0, 'no reservation row');
  t.same(await tempFiles(), [], 'no temp file');
  t.equal((await objectFiles()).length, before.files, 'no object');
  t.equal((await uploadMultipart(server, team.teamId, team.key, { fileName: 'again.png', content: pngLike(3 * MiB) })).status, 201, 'the next upload works');
});

t.test('after a restart, API-key changes made elsewhere still reach the instance (its LISTEN connection reconnects)', async (t) => {
  await pg.stop('fast');
  await pg.start();
  t.ok(await eventually(listening, 15_000), 'the instance listens on auth_changes again');
  const created = await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, {});
  t.equal(created.status, 201);
  const key: string = created.body.key;
  t.equal((await server.media('GET', listPath, key)).status, 200, 'the key works (and is now cached for an hour)');
  // Another instance deletes the key: the row goes and the change is announced, as ApiKeyService does.
  const client = await connectPg(pg.url);
  try {
    await client.query('begin');
    await client.query('delete from api_key where id = $1', [created.body.id]);
    await client.query(`select pg_notify('auth_changes', $1)`, [team.teamId]);
    await client.query('commit');
  } finally {
    await client.end();
  }
  t.ok(await eventually(async () => (await server.media('GET', listPath, key)).status === 401, 5_000), 'the deleted key is refused at once, not after the cache hour');
});

t.test('transactions open when the database restarts give their pool connections back', async (t) => {
  // As many open transactions as the pool has connections, each waiting between two statements.
  let resume!: () => void;
  const gate = new Promise<void>((resolve) => (resume = resolve));
  const transactions = Array.from({ length: 3 }, () =>
    server.app.services.orm.em.fork().transactional(async (em) => {
      await em.execute('select 1');
      await gate;
      await em.execute('select 2');
    }).then(() => 'committed', (error: Error) => error.message),
  );
  t.ok(await eventually(async () => (await busyConnections()) === 3, 5_000), 'the three transactions hold the whole pool');
  await pg.stop('fast');
  resume();
  const outcomes = await Promise.all(transactions);
  t.ok(outcomes.every((outcome) => outcome !== 'committed'), 'they failed with the database', { outcomes });
  await pg.start();
  t.equal(await busyConnections(), 0, 'no connection stays checked out');
  t.ok(await eventually(async () => (await listStatus()) === 200, 15_000), 'requests reach the database again (the pool was not exhausted)');
  const upload = await uploadMultipart(server, team.teamId, team.key, { fileName: 'pool.png', content: pngLike(400 * KiB) });
  t.equal(upload.status, 201, 'an upload commits (a transaction of its own)');
});
