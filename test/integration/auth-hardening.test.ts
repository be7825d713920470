import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import t from 'tap';
import { generateApiKey } from '../../src/auth/api-key-secret.ts';
import { connectPg } from '../helpers/database.ts';
import { expectError, startTestServer, TEST_AUTH_SECRET, type ApiResponse, type TestServer } from '../helpers/server.ts';
import { eventually } from '../helpers/wait.ts';

// Issue 17.8: unknown API-key prefixes are remembered (no database query per repeat), failed
// authentications are counted per client address (429 after a burst), and a key without "Bearer"
// gets a 401 that names the expected form.

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A request from `localAddress` (any 127.0.0.0/8 address reaches the loopback server), so tests can be several clients. */
function requestFrom(server: TestServer, localAddress: string, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<ApiResponse> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${server.baseUrl}${path}`, {
      method,
      localAddress,
      agent: false,
      headers: { ...headers, ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}) },
    });
    request.on('response', (response) => {
      let text = '';
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => {
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(response.headers)) if (typeof value === 'string') responseHeaders.set(name, value);
        resolve({ status: response.statusCode ?? 0, headers: responseHeaders, body: text ? JSON.parse(text) : undefined });
      });
    });
    request.on('error', reject);
    request.end(payload);
  });
}

/** A random key of the well-formed shape with the given prefix. */
function keyWithPrefix(prefix: string): string {
  return `tws_${prefix}_${randomBytes(32).toString('base64url')}`;
}

const randomPrefix = () => randomBytes(8).toString('hex');

async function lookups(server: TestServer, result: 'found' | 'missing'): Promise<number> {
  const metric = await server.app.services.metrics.apiKeyLookups.get();
  return metric.values.find((value) => value.labels.result === result)?.value ?? 0;
}

t.test('repeated misses of one unknown prefix reach the database once', async (t) => {
  const server = await startTestServer(t, {
    // A long key cache proves that invalidation, not expiry, forgets a miss; the failure budget is out of the way here.
    settings: { API_KEY_CACHE_SECONDS: 3600, AUTH_FAILURE_LIMIT_POINTS: 1_000_000 },
  });
  const team = await server.createTeam('Negative');
  const path = `/v1/cdn/media/${team.teamId}`;
  t.equal((await server.media('GET', path, team.key)).status, 200);
  const missingBefore = await lookups(server, 'missing');
  const foundBefore = await lookups(server, 'found');

  // A flood of 1000 random keys sharing one unknown prefix, 100 at a time.
  const prefix = randomPrefix();
  const statuses: number[] = [];
  for (let batch = 0; batch < 10; batch++) {
    const responses = await Promise.all(Array.from({ length: 100 }, () => server.media('GET', path, keyWithPrefix(prefix))));
    statuses.push(...responses.map((response) => response.status));
  }
  t.ok(statuses.every((status) => status === 401), 'every one is 401');
  t.equal((await lookups(server, 'missing')) - missingBefore, 1, 'one database lookup for the whole flood');

  // Each new prefix is one lookup (the failure budget bounds how many a client can send).
  for (let i = 0; i < 5; i++) expectError(t, await server.media('GET', path, keyWithPrefix(randomPrefix())), 401, 'error.unauthorized');
  t.equal((await lookups(server, 'missing')) - missingBefore, 6, 'five new prefixes, five lookups');

  // The real key still works, from its cache, and a wrong secret for its prefix costs no lookup either.
  t.equal((await server.media('GET', path, team.key)).status, 200);
  expectError(t, await server.media('GET', path, keyWithPrefix(team.key.slice(4, 20))), 401, 'error.unauthorized');
  t.equal(await lookups(server, 'found'), foundBefore, 'the cached key was not looked up again');
  t.equal((await lookups(server, 'missing')) - missingBefore, 6);
});

t.test('a remembered miss is forgotten when a key gets that prefix (the auth-changes channel)', async (t) => {
  const server = await startTestServer(t, { settings: { API_KEY_CACHE_SECONDS: 3600, AUTH_FAILURE_LIMIT_POINTS: 1_000_000 } });
  const team = await server.createTeam('Invalidate');
  const path = `/v1/cdn/media/${team.teamId}`;
  const next = generateApiKey();
  expectError(t, await server.media('GET', path, next.key), 401, 'error.unauthorized');
  // Asked again until a request makes no lookup: the announcement of the team's own key, if it is still on its way
  // (seen on a loaded machine), forgets the misses remembered before it arrives.
  t.ok(await eventually(async () => {
    const missing = await lookups(server, 'missing');
    const again = await server.media('GET', path, next.key);
    return again.status === 401 && (await lookups(server, 'missing')) === missing;
  }), 'the miss is remembered');

  // The team's key takes that prefix and secret, announced as every key change is (announceAuthChange).
  const pg = await connectPg(server.databaseUrl);
  t.teardown(() => pg.end());
  await pg.query('begin');
  await pg.query('update api_key set prefix = $1, secret_hash = $2 where id = $3', [next.prefix, next.secretHash, team.keyId]);
  await pg.query(`select pg_notify('auth_changes', $1)`, [team.teamId]);
  await pg.query('commit');
  t.ok(await eventually(async () => (await server.media('GET', path, next.key)).status === 200), 'the key works at once, not after the cache lifetime');

  // Rerolled through the API, the new key works and the old one is refused.
  const rerolled = await server.admin('POST', `/v1/admin/api-keys/${team.keyId}/reroll`);
  t.equal(rerolled.status, 200);
  t.equal((await server.media('GET', path, rerolled.body.key)).status, 200);
  expectError(t, await server.media('GET', path, next.key), 401, 'error.unauthorized');
});

t.test('failed authentications are counted per client address: 429 with Retry-After after the burst', async (t) => {
  const server = await startTestServer(t, { settings: { AUTH_FAILURE_LIMIT_POINTS: 5, AUTH_FAILURE_LIMIT_DURATION_SECONDS: 60 } });
  const team = await server.createTeam('Throttle');
  const path = `/v1/cdn/media/${team.teamId}`;
  const attacker = '127.0.0.1';
  const failures: Record<string, string>[] = [
    { authorization: `Bearer ${keyWithPrefix(randomPrefix())}` },
    { authorization: `Bearer ${keyWithPrefix(randomPrefix())}` },
    { authorization: `Bearer ${keyWithPrefix(team.key.slice(4, 20))}` }, // a real prefix, a wrong secret
    { authorization: 'Bearer not-a-key' },
    {},
  ];
  for (const headers of failures) expectError(t, await requestFrom(server, attacker, 'GET', path, headers), 401, 'error.unauthorized');
  const lookupsBefore = (await lookups(server, 'missing')) + (await lookups(server, 'found'));

  const refused = await requestFrom(server, attacker, 'GET', path, { authorization: `Bearer ${keyWithPrefix(randomPrefix())}` });
  expectError(t, refused, 429, 'error.tooManyRequests');
  const retryAfter = Number(refused.headers.get('retry-after'));
  t.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After within the window (${retryAfter})`);
  t.equal(refused.body.value, retryAfter, 'the error body carries the same seconds');
  t.match(refused.body.message, /failed authentications/);
  for (let i = 0; i < 20; i++) await requestFrom(server, attacker, 'GET', path, { authorization: `Bearer ${keyWithPrefix(randomPrefix())}` });
  t.equal((await lookups(server, 'missing')) + (await lookups(server, 'found')), lookupsBefore, 'refused requests reach no database');

  // Valid credentials from the same address are served all the same (issue 32.1).
  t.equal((await requestFrom(server, attacker, 'GET', path, { authorization: `Bearer ${team.key}` })).status, 200, 'the valid key from that address is served');
  const operator = await requestFrom(server, attacker, 'POST', '/v1/admin/teams', { authSecret: TEST_AUTH_SECRET }, { name: 'Served' });
  t.equal(operator.status, 201, 'the right operator secret from that address is served');

  const legit = await requestFrom(server, '127.0.0.2', 'GET', path, { authorization: `Bearer ${team.key}` });
  t.equal(legit.status, 200, 'a legit key from another address still works');
  t.equal(legit.headers.get('ratelimit-limit'), '32', 'with its own per-key rate limit headers');
});

t.test('wrong authSecret values are throttled the same way', async (t) => {
  const server = await startTestServer(t, { settings: { AUTH_FAILURE_LIMIT_POINTS: 3, AUTH_FAILURE_LIMIT_DURATION_SECONDS: 60 } });
  const guesser = '127.0.0.3';
  for (const secret of ['wrong-secret-number-one', 'wrong-secret-number-two', '']) {
    expectError(t, await requestFrom(server, guesser, 'POST', '/v1/admin/teams', { authSecret: secret }, { name: 'Nope' }), 401, 'error.unauthorized');
  }
  const refused = await requestFrom(server, guesser, 'POST', '/v1/admin/teams', { authSecret: 'wrong-secret-number-four' }, { name: 'Nope' });
  expectError(t, refused, 429, 'error.tooManyRequests');
  t.ok(Number(refused.headers.get('retry-after')) >= 1);
  const correct = await requestFrom(server, guesser, 'POST', '/v1/admin/teams', { authSecret: TEST_AUTH_SECRET }, { name: 'Right' });
  t.equal(correct.status, 201, 'the right secret from the guessing address is served');
  const automations = await requestFrom(server, guesser, 'GET', '/v1/admin/teams/00000000-0000-4000-8000-000000000000/automations', { authSecret: 'x' });
  expectError(t, automations, 429, 'error.tooManyRequests');

  const operator = await requestFrom(server, '127.0.0.4', 'POST', '/v1/admin/teams', { authSecret: TEST_AUTH_SECRET }, { name: 'Fine' });
  t.equal(operator.status, 201, 'the operator from another address is served');
  const pg = await connectPg(server.databaseUrl);
  t.teardown(() => pg.end());
  t.same((await pg.query('select name from team order by name')).rows, [{ name: 'Fine' }, { name: 'Right' }], 'no refused request created anything');
});

t.test('with REDIS_URL the failure budget holds across instances', async (t) => {
  const settings = { AUTH_FAILURE_LIMIT_POINTS: 2, AUTH_FAILURE_LIMIT_DURATION_SECONDS: 60, REDIS_URL: redisUrl };
  const first = await startTestServer(t, { settings });
  const second = await startTestServer(t, { settings, databaseUrl: first.databaseUrl });
  const team = await first.createTeam('Fleet');
  const path = `/v1/cdn/media/${team.teamId}`;
  // An address of its own, so counts left in Redis by other runs do not matter.
  const address = `127.${1 + (randomBytes(1)[0]! % 250)}.${randomBytes(1)[0]!}.${1 + (randomBytes(1)[0]! % 250)}`;
  for (let i = 0; i < 2; i++) {
    expectError(t, await requestFrom(first, address, 'GET', path, { authorization: `Bearer ${keyWithPrefix(randomPrefix())}` }), 401, 'error.unauthorized');
  }
  expectError(t, await requestFrom(second, address, 'GET', path, { authorization: `Bearer ${keyWithPrefix(randomPrefix())}` }), 429, 'error.tooManyRequests');
  t.equal((await requestFrom(second, address, 'GET', path, { authorization: `Bearer ${team.key}` })).status, 200, 'a valid key from that address is served');
  t.equal((await requestFrom(second, '127.0.0.1', 'GET', path, { authorization: `Bearer ${team.key}` })).status, 200);
});

t.test('a key without "Bearer" is 401 with a message naming the expected form', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('NoBearer');
  const path = `/v1/cdn/media/${team.teamId}`;
  const bare = await server.request('GET', path, { headers: { authorization: team.key } });
  expectError(t, bare, 401, 'error.unauthorized');
  t.match(bare.body.message, /Authorization: Bearer <API key>/, bare.body.message);
  t.match(bare.body.message, /must follow the word Bearer/);
  const missing = await server.request('GET', path);
  expectError(t, missing, 401, 'error.unauthorized');
  t.match(missing.body.message, /Authorization: Bearer <API key>/, missing.body.message);
  const basic = await server.request('GET', path, { headers: { authorization: 'Basic dXNlcjpwdw==' } });
  expectError(t, basic, 401, 'error.unauthorized');
  t.match(basic.body.message, /expected Authorization: Bearer <API key>/, basic.body.message);
  t.equal((await server.media('GET', path, team.key)).status, 200);
});
