import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import { expectError, startTestServer } from '../helpers/server.ts';

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

async function exhaust(t: Test, server: Awaited<ReturnType<typeof startTestServer>>, key: string, path: string, points: number) {
  for (let i = 1; i <= points; i++) {
    const response = await server.media('GET', path, key);
    t.equal(response.status, 200, `request ${i} of ${points} is served`);
    if (i === 1) {
      t.equal(response.headers.get('ratelimit-limit'), String(points));
      t.equal(response.headers.get('ratelimit-remaining'), String(points - 1));
      t.ok(Number(response.headers.get('ratelimit-reset')) >= 1);
    }
  }
}

t.test('in process: the request after RATE_LIMIT_POINTS in the window is 429 with Retry-After', async (t) => {
  const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 5, RATE_LIMIT_DURATION_SECONDS: 60 } });
  const team = await server.createTeam('Limited');
  const path = `/v1/cdn/media/${team.teamId}`;
  await exhaust(t, server, team.key, path, 5);
  const refused = await server.media('GET', path, team.key);
  expectError(t, refused, 429, 'error.tooManyRequests');
  t.ok(Number(refused.headers.get('retry-after')) >= 1, 'Retry-After in seconds');
  t.equal(refused.headers.get('ratelimit-remaining'), '0');

  const other = await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, {});
  t.equal((await server.media('GET', path, other.body.key)).status, 200, 'the limit is per key');
  expectError(t, await server.media('GET', path, 'tws_0123456789abcdef_' + 'A'.repeat(43)), 401, 'error.unauthorized');
});

t.test('the default is 32 requests per 10 seconds', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('Default');
  const path = `/v1/cdn/media/${team.teamId}`;
  await exhaust(t, server, team.key, path, 32);
  expectError(t, await server.media('GET', path, team.key), 429, 'error.tooManyRequests');
});

t.test('with REDIS_URL the limit holds across two instances', async (t) => {
  const settings = { RATE_LIMIT_POINTS: 6, RATE_LIMIT_DURATION_SECONDS: 60, REDIS_URL: redisUrl };
  const first = await startTestServer(t, { settings });
  const second = await startTestServer(t, { databaseUrl: first.databaseUrl, settings });
  const team = await first.createTeam(`R${randomBytes(3).toString('hex')}`);
  const path = `/v1/cdn/media/${team.teamId}`;
  for (let i = 0; i < 6; i++) {
    const target = i % 2 === 0 ? first : second;
    t.equal((await target.media('GET', path, team.key)).status, 200);
  }
  expectError(t, await first.media('GET', path, team.key), 429, 'error.tooManyRequests');
  expectError(t, await second.media('GET', path, team.key), 429, 'error.tooManyRequests');
});

t.test('when Redis is unreachable, limits fall back to each instance and requests still work', async (t) => {
  const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 3, RATE_LIMIT_DURATION_SECONDS: 60, REDIS_URL: 'redis://127.0.0.1:1' } });
  const team = await server.createTeam('NoRedis');
  const path = `/v1/cdn/media/${team.teamId}`;
  for (let i = 0; i < 3; i++) t.equal((await server.media('GET', path, team.key)).status, 200);
  expectError(t, await server.media('GET', path, team.key), 429, 'error.tooManyRequests');
});
