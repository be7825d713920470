import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import t from 'tap';
import { loadConfig } from '../../src/config/config.ts';
import { ServedTrafficCounter } from '../../src/domain/media/served-traffic.ts';
import { Router } from '../../src/http/router.ts';
import { fileServingRoutes } from '../../src/http/routes/media/file-serving-routes.ts';
import { libraryRoutes } from '../../src/http/routes/media/library-routes.ts';
import { HttpServer } from '../../src/http/server.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { connectPg } from '../helpers/database.ts';
import { startTestServer, TEST_AUTH_SECRET } from '../helpers/server.ts';
import { KiB, MiB, pngLike, uploadMultipart } from '../helpers/uploads.ts';

/*
 * Until app.ts constructs the counter and passes it to fileServingRoutes, this
 * test mounts the real file-serving and usage routes on a second HttpServer
 * over the test server's services, with a counter it flushes itself.
 */

function utcDay(offsetDays: number): string {
  return new Date(Date.now() - offsetDays * 86_400_000).toISOString().slice(0, 10);
}

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
const { services } = server.app;
const config = loadConfig({
  env: {},
  overrides: { PORT: 0, DATABASE_URL: server.databaseUrl, DATA_DIR: server.dataDir, AUTH_SECRET: TEST_AUTH_SECRET, LOG_LEVEL: 'silent' },
});
const counter = new ServedTrafficCounter({ orm: services.orm, flushIntervalMs: 0 });
const router = new Router();
for (const route of [...fileServingRoutes(services, config, { servedTraffic: counter }), ...libraryRoutes(services, config)]) router.add(route);
const counting = new HttpServer({ router, logger: createLogger('silent') });
const port = await counting.listen('127.0.0.1', 0);
const countingUrl = `http://127.0.0.1:${port}`;
t.teardown(() => counting.close());

const alpha = await server.createTeam('Alpha', 'enterprise');
const beta = await server.createTeam('Beta', 'enterprise');

async function uploadPublic(team: typeof alpha, content: Buffer): Promise<{ path: string; hash: string }> {
  const response = await uploadMultipart(server, team.teamId, team.key, { fileName: 'f.png', contentType: 'image/png', content });
  if (response.status !== 201 || response.body.public !== true) throw new Error(`upload failed: ${JSON.stringify(response.body)}`);
  return { path: `/${response.body.path}`, hash: response.body.hash };
}

async function fetchCounting(path: string, init: { method?: string; headers?: Record<string, string> } = {}): Promise<{ status: number; body: Buffer }> {
  const response = await fetch(`${countingUrl}${path}`, { method: init.method ?? 'GET', headers: init.headers });
  return { status: response.status, body: Buffer.from(await response.arrayBuffer()) };
}

async function served(team: typeof alpha, days = 30): Promise<{ date: string; requests: number; bytes: number }[]> {
  const response = await fetch(`${countingUrl}/v1/cdn/media/${team.teamId}/usage?days=${days}`, { headers: { authorization: `Bearer ${team.key}` } });
  if (response.status !== 200) throw new Error(`usage failed: ${response.status}`);
  return ((await response.json()) as { served: { date: string; requests: number; bytes: number }[] }).served;
}

const alphaContent = pngLike(300 * KiB + 7);
const alphaFile = await uploadPublic(alpha, alphaContent);
const betaContent = pngLike(50 * KiB + 3);
const betaFile = await uploadPublic(beta, betaContent);

t.test('GET, Range, HEAD and 304 are counted with the bytes sent; refusals are not', async (t) => {
  t.same(await served(alpha), Array.from({ length: 30 }, (_, index) => ({ date: utcDay(29 - index), requests: 0, bytes: 0 })), 'nothing served yet: zeros');

  const full = await fetchCounting(alphaFile.path);
  t.equal(full.status, 200);
  t.ok(full.body.equals(alphaContent));
  t.equal((await fetchCounting(alphaFile.path)).body.length, alphaContent.length);
  const range = await fetchCounting(alphaFile.path, { headers: { range: 'bytes=100-1099' } });
  t.equal(range.status, 206);
  t.equal(range.body.length, 1000);
  const head = await fetchCounting(alphaFile.path, { method: 'HEAD' });
  t.equal(head.status, 200);
  const notModified = await fetchCounting(alphaFile.path, { headers: { 'if-none-match': `"${alphaFile.hash}"` } });
  t.equal(notModified.status, 304);
  // Not served: an unsatisfiable range, a missing file, another team's file under this team's path.
  t.equal((await fetchCounting(alphaFile.path, { headers: { range: `bytes=${alphaContent.length}-` } })).status, 416);
  t.equal((await fetchCounting(`/media/team/${alpha.teamId}/${randomUUID()}.png`)).status, 404);
  t.equal((await fetchCounting(betaFile.path.replace(beta.teamId, alpha.teamId))).status, 404);
  // Beta's own traffic.
  t.equal((await fetchCounting(betaFile.path)).status, 200);

  await counter.flush();
  const expected = { date: utcDay(0), requests: 5, bytes: 2 * alphaContent.length + 1000 };
  const window = await served(alpha);
  t.equal(window.length, 30);
  t.same(window[29], expected, 'today: 5 requests, the bytes sent');
  t.same(window.slice(0, 29), Array.from({ length: 29 }, (_, index) => ({ date: utcDay(29 - index), requests: 0, bytes: 0 })), 'other days are zeros');
  t.same(await served(alpha, 1), [expected], 'days=1');
  t.same((await served(beta)).at(-1), { date: utcDay(0), requests: 1, bytes: betaContent.length }, 'beta sees only its own');

  await counter.flush();
  t.same((await served(alpha)).at(-1), expected, 'an empty flush changes nothing');
  await fetchCounting(alphaFile.path, { headers: { range: 'bytes=-10' } });
  await counter.flush();
  t.same((await served(alpha)).at(-1), { ...expected, requests: 6, bytes: expected.bytes + 10 }, 'flushes add up');
});

t.test('an aborted download counts the request and at most the bytes that went out', async (t) => {
  const team = await server.createTeam('Gamma', 'enterprise');
  const big = pngLike(24 * MiB + 5);
  const file = await uploadPublic(team, big);
  const received = await new Promise<number>((resolve, reject) => {
    const request = httpRequest(`${countingUrl}${file.path}`, (response) => {
      response.once('data', (chunk: Buffer) => {
        request.destroy();
        resolve(chunk.length);
      });
    });
    request.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ECONNRESET') reject(error);
    });
    request.end();
  });
  t.ok(received > 0);
  // Let the server notice the abort and end the body.
  await new Promise((resolve) => setTimeout(resolve, 300));
  await counter.flush();
  const today = (await served(team)).at(-1)!;
  t.equal(today.requests, 1);
  t.ok(today.bytes < big.length, `counted ${today.bytes} of ${big.length} bytes`);
});

t.test('the counter: one upsert per flush, UTC days, deleted teams skipped, failures kept', async (t) => {
  const team = await server.createTeam('Delta');
  let now = Date.parse('2026-03-01T23:59:59.500Z');
  const clocked = new ServedTrafficCounter({ orm: services.orm, flushIntervalMs: 0, now: () => now });
  t.teardown(() => clocked.stop());
  clocked.record(team.teamId, 2, 500);
  now += 1000;
  clocked.record(team.teamId, 1, 7);
  clocked.record(randomUUID(), 3, 3); // a team that does not exist (deleted since): skipped, not an error
  await clocked.flush();
  clocked.record(team.teamId, 1, 1);
  await Promise.all([clocked.flush(), clocked.flush()]);

  const db = await connectPg(server.databaseUrl);
  try {
    const rows = await db.query(`select to_char(day, 'YYYY-MM-DD') as day, requests::int, bytes::int from media_served_daily where team_id = $1 order by day`, [team.teamId]);
    t.same(rows.rows, [
      { day: '2026-03-01', requests: 2, bytes: 500 },
      { day: '2026-03-02', requests: 2, bytes: 8 },
    ]);

    // A failing write keeps the counts for the next flush.
    await db.query(`alter table media_served_daily rename to media_served_daily_away`);
    clocked.record(team.teamId, 5, 50);
    try {
      await t.rejects(clocked.flush());
    } finally {
      await db.query(`alter table media_served_daily_away rename to media_served_daily`);
    }
    clocked.record(team.teamId, 1, 1);
    await clocked.flush();
    const after = await db.query(`select requests::int, bytes::int from media_served_daily where team_id = $1 and day = '2026-03-02'`, [team.teamId]);
    t.same(after.rows, [{ requests: 8, bytes: 59 }]);
  } finally {
    await db.end();
  }
});

t.test('a counted body counts the chunks taken, not the one in flight when the client left', async (t) => {
  const records: number[] = [];
  const fake = new ServedTrafficCounter({ orm: services.orm, flushIntervalMs: 0 });
  fake.record = (_teamId: string, _requests: number, bytes: number) => {
    records.push(bytes);
  };
  let destroyed = false;
  const source = {
    async *[Symbol.asyncIterator]() {
      yield Buffer.alloc(3);
      yield Buffer.alloc(4);
    },
    destroy() {
      destroyed = true;
    },
  };
  const controller = new AbortController();
  const body = fake.countBody(alpha.teamId, source, controller.signal);
  const iterator = body[Symbol.asyncIterator]();
  await iterator.next();
  await iterator.next(); // the 3 bytes were taken
  controller.abort(); // the client leaves while the 4 bytes are in flight
  body.destroy?.();
  t.same(await iterator.next(), { done: true, value: undefined });
  t.ok(destroyed, 'destroy reaches the source');
  t.same(records, [3]);

  const whole = fake.countBody(alpha.teamId, source);
  let total = 0;
  for await (const chunk of whole) total += chunk.length;
  t.equal(total, 7);
  t.same(records, [3, 3, 4]);
});
