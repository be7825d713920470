import { randomBytes } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { signUp } from '../helpers/accounts.ts';
import { expectError, startTestServer, TEST_AUTH_SECRET, type TestServer } from '../helpers/server.ts';
import { createUploadUrl, withParam } from '../helpers/upload-urls.ts';
import { answerOf } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';

// Issue 32.1: failed authentications never lock out valid credentials, and behind a trusted proxy
// (TRUSTED_PROXIES) every per-address mechanism sees the real client's address.

interface Sent {
  status: number;
  headers: Headers;
  body: any;
}

/** One request over a fresh connection from `localAddress` (any 127.0.0.0/8 address reaches a loopback server). */
function sendFrom(localAddress: string, method: string, url: string, headers: Record<string, string> = {}, body?: Buffer): Promise<Sent> {
  const target = new URL(url);
  const request = httpRequest(target, {
    method, localAddress, agent: false,
    headers: { ...headers, ...(body ? { 'content-length': String(body.length) } : {}) },
  });
  const answer = answerOf(request, method, `${target.pathname}${target.search}`);
  request.end(body);
  return answer;
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const guessedKey = () => `tws_${randomBytes(8).toString('hex')}_${randomBytes(32).toString('base64url')}`;
const dataUri = (text: string) => `data:text/plain;base64,${Buffer.from(text).toString('base64')}`;

function uploadJsonFrom(server: TestServer, localAddress: string, teamId: string, key: string, fileName: string): Promise<Sent> {
  return sendFrom(localAddress, 'POST', `${server.baseUrl}/v1/cdn/media/${teamId}/upload`, { ...bearer(key), 'content-type': 'application/json' },
    json({ fileName, file: dataUri(`from ${localAddress}`) }));
}

async function lookups(server: TestServer): Promise<number> {
  const metric = await server.app.services.metrics.apiKeyLookups.get();
  return metric.values.reduce((sum, value) => sum + value.value, 0);
}

t.test('forged upload URLs from one address lock out no valid credential from it', async (t) => {
  // The defaults: 30 failures a minute per address.
  const server = await startTestServer(t);
  const team = await server.createTeam('Fleet');
  const address = '127.0.0.9';
  const made = await createUploadUrl(server, team.teamId, team.key, { fileName: 'round.log' });
  const forged = withParam(made.url, 'signature', 'A'.repeat(43));

  const statuses: number[] = [];
  for (let i = 0; i < 40; i++) {
    statuses.push((await sendFrom(address, 'POST', forged, { 'content-type': 'text/plain' }, Buffer.from('forged'))).status);
  }
  t.same(statuses.slice(0, 30), Array(30).fill(403), 'the first 30 forgeries are refused as such');
  t.same(statuses.slice(30), Array(10).fill(429), 'past the budget they get 429');

  const byUrl = await sendFrom(address, 'POST', made.url, { 'content-type': 'text/plain' }, Buffer.from('round 3 started\n'));
  t.equal(byUrl.status, 201, 'a valid upload URL is served');
  const byKey = await uploadJsonFrom(server, address, team.teamId, team.key, 'server.log');
  t.equal(byKey.status, 201, 'a valid key uploads');
  t.equal(byKey.headers.get('ratelimit-limit'), '32', 'under its own per-key rate limit');

  // A key this instance has never seen is known by its prefix (announced by the database when it
  // is made, so within moments), looked up and served.
  const fresh = await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, { description: 'new server' });
  t.equal(fresh.status, 201);
  const listFresh = () => sendFrom(address, 'GET', `${server.baseUrl}/v1/cdn/media/${team.teamId}`, bearer(fresh.body.key));
  t.ok(await eventually(async () => (await listFresh()).status === 200, 2000), 'a key made a moment ago is served');

  const user = await signUp(server);
  t.equal((await sendFrom(address, 'GET', `${server.baseUrl}/v1/users/me`, bearer(user.token))).status, 200, 'a valid session is served');

  const operator = await sendFrom(address, 'POST', `${server.baseUrl}/v1/admin/teams`, { authSecret: TEST_AUTH_SECRET, 'content-type': 'application/json' }, json({ name: 'Second' }));
  t.equal(operator.status, 201, 'the right operator secret is served');

  // What a guesser sends is still refused, and costs no database lookup.
  const before = await lookups(server);
  for (let i = 0; i < 10; i++) {
    expectError(t, await sendFrom(address, 'GET', `${server.baseUrl}/v1/cdn/media/${team.teamId}`, bearer(guessedKey())), 429, 'error.tooManyRequests');
  }
  expectError(t, await sendFrom(address, 'GET', `${server.baseUrl}/v1/users/me`, bearer(`tss_${randomBytes(32).toString('base64url')}`)), 429, 'error.tooManyRequests');
  expectError(t, await sendFrom(address, 'POST', `${server.baseUrl}/v1/admin/teams`, { authSecret: 'wrong-secret-0123456789' }), 429, 'error.tooManyRequests');
  t.equal(await lookups(server), before, 'refused guesses reached no database');

  // A wrong secret for a real key's prefix costs at most the one lookup that caches the key (none
  // while it is cached, as a fleet's keys in use are; a key change on any instance drops the entry).
  const wrongSecret = bearer(`${team.key.slice(0, 21)}${'x'.repeat(43)}`);
  for (let i = 0; i < 5; i++) expectError(t, await sendFrom(address, 'GET', `${server.baseUrl}/v1/cdn/media/${team.teamId}`, wrongSecret), 429, 'error.tooManyRequests');
  t.ok((await lookups(server)) - before <= 1, 'five wrong secrets for one real prefix: one lookup at most');
});

/**
 * A reverse proxy as nginx's example configures it: it appends the address that connected to it to
 * X-Forwarded-For (or, with `forwarded`, to Forwarded) and connects to the service from 127.0.0.1.
 */
async function startProxy(t: Test, upstream: string, header: 'x-forwarded-for' | 'forwarded' = 'x-forwarded-for'): Promise<string> {
  const target = new URL(upstream);
  const proxy: Server = createServer((incoming, outgoing) => {
    const client = incoming.socket.remoteAddress!;
    const headers: IncomingHttpHeaders = { ...incoming.headers, host: target.host };
    if (header === 'x-forwarded-for') headers['x-forwarded-for'] = [incoming.headers['x-forwarded-for'], client].filter(Boolean).join(', ');
    else headers['forwarded'] = [incoming.headers['forwarded'], `for="${client}:${incoming.socket.remotePort}";proto=http`].filter(Boolean).join(', ');
    const forward = httpRequest({ host: target.hostname, port: target.port, localAddress: '127.0.0.1', method: incoming.method, path: incoming.url, headers }, (answer) => {
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(outgoing);
    });
    forward.on('error', () => outgoing.destroy());
    incoming.pipe(forward);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => proxy.close(() => resolve())));
  return `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
}

/** A logger whose JSON lines the test can read (the access log among them). */
function recordingLogger() {
  const lines: any[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

for (const header of ['x-forwarded-for', 'forwarded'] as const) {
  t.test(`behind a trusted proxy (${header}), each client has its own failure budget and its own address in the access log`, async (t) => {
    const { logger, lines } = recordingLogger();
    const server = await startTestServer(t, { settings: { TRUSTED_PROXIES: '127.0.0.1, ::1', AUTH_FAILURE_LIMIT_POINTS: 3 }, logger });
    const team = await server.createTeam('Proxied');
    const proxy = await startProxy(t, server.baseUrl, header);
    const list = `${proxy}/v1/cdn/media/${team.teamId}`;
    const [first, second] = ['127.0.0.21', '127.0.0.22'];

    // The first player forges an address of its own; the proxy appends the real one, which is what counts.
    const forgery: Record<string, string> = header === 'x-forwarded-for' ? { 'x-forwarded-for': '203.0.113.7' } : { forwarded: 'for=203.0.113.7' };
    for (let i = 0; i < 3; i++) expectError(t, await sendFrom(first, 'GET', list, { ...bearer(guessedKey()), ...forgery }), 401, 'error.unauthorized');
    expectError(t, await sendFrom(first, 'GET', list, bearer(guessedKey())), 429, 'error.tooManyRequests');
    expectError(t, await sendFrom(first, 'GET', list, { ...bearer(guessedKey()), ...forgery }), 429, 'error.tooManyRequests');

    // The second client behind the same proxy has its own budget.
    expectError(t, await sendFrom(second, 'GET', list, bearer(guessedKey())), 401, 'error.unauthorized');
    t.equal((await sendFrom(second, 'GET', list, bearer(team.key))).status, 200);
    t.equal((await sendFrom(first, 'GET', list, bearer(team.key))).status, 200, 'the first one\'s valid key is served too');

    const access = lines.filter((line) => line.component === 'access' && line.teamId === team.teamId);
    t.ok(access.length >= 7, 'the requests are in the access log');
    t.same(new Set(access.map((line) => line.remoteAddress)), new Set([first, second]), 'each with the client\'s address, not the proxy\'s');

    // /metrics through a local proxy is no loopback request.
    expectError(t, await sendFrom('127.0.0.1', 'GET', `${proxy}/metrics`), 403, 'error.forbidden');
    t.equal((await sendFrom('127.0.0.1', 'GET', `${server.baseUrl}/metrics`)).status, 200, 'a loopback client gets /metrics');
  });
}

t.test('without TRUSTED_PROXIES, forwarding headers change nothing', async (t) => {
  const server = await startTestServer(t, { settings: { AUTH_FAILURE_LIMIT_POINTS: 3 } });
  const team = await server.createTeam('Direct');
  const list = `${server.baseUrl}/v1/cdn/media/${team.teamId}`;
  const address = '127.0.0.31';
  for (let i = 0; i < 3; i++) {
    const forged = { 'x-forwarded-for': `198.51.100.${i}`, forwarded: `for=198.51.100.${i}` };
    expectError(t, await sendFrom(address, 'GET', list, { ...bearer(guessedKey()), ...forged }), 401, 'error.unauthorized');
  }
  // A new forged address does not buy a new budget.
  expectError(t, await sendFrom(address, 'GET', list, { ...bearer(guessedKey()), 'x-forwarded-for': '198.51.100.99' }), 429, 'error.tooManyRequests');
  // A request that names a client behind it is no loopback request, trusted or not.
  expectError(t, await sendFrom('127.0.0.1', 'GET', `${server.baseUrl}/metrics`, { 'x-forwarded-for': '198.51.100.1' }), 403, 'error.forbidden');

  // Through an untrusted proxy, its clients share the proxy's budget (as before the setting existed).
  const proxy = await startProxy(t, server.baseUrl);
  for (let i = 0; i < 3; i++) expectError(t, await sendFrom('127.0.0.41', 'GET', `${proxy}/v1/cdn/media/${team.teamId}`, bearer(guessedKey())), 401, 'error.unauthorized');
  expectError(t, await sendFrom('127.0.0.42', 'GET', `${proxy}/v1/cdn/media/${team.teamId}`, bearer(guessedKey())), 429, 'error.tooManyRequests');
  t.equal((await sendFrom('127.0.0.42', 'GET', `${proxy}/v1/cdn/media/${team.teamId}`, bearer(team.key))).status, 200, 'a valid key is still served');
});

t.test('TRUSTED_PROXIES must hold addresses and CIDR ranges', async (t) => {
  await t.rejects(startTestServer(t, { settings: { TRUSTED_PROXIES: '127.0.0.1, proxy.example' } }), /TRUSTED_PROXIES must be/);
  await t.rejects(startTestServer(t, { settings: { TRUSTED_PROXIES: '10.0.0.0/33' } }), /TRUSTED_PROXIES must be/);
});
