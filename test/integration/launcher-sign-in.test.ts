import { createHash, randomBytes } from 'node:crypto';
import t from 'tap';
import { connectPg } from '../helpers/database.ts';
import { expectError, startTestServer } from '../helpers/server.ts';

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000, API_KEY_CACHE_SECONDS: 0, AUTH_FAILURE_LIMIT_POINTS: 1000 } });
let counter = 0;

async function person() {
  const n = ++counter;
  const response = await server.request('POST', '/v1/auth/sign-up', { body: { email: `gamer${n}@example.com`, username: `gamer_${n}`, password: 'a long pass phrase' } });
  return { token: response.body.token as string, userId: response.body.user.id as string };
}

function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

const start = (body: unknown, token?: string) =>
  server.request('POST', '/v1/auth/launcher/codes', { body, headers: token ? { authorization: `Bearer ${token}` } : {} });
const exchange = (code: string, codeVerifier: string) => server.request('POST', '/v1/auth/launcher/token', { body: { code, codeVerifier } });

async function sessionsOf(userId: string): Promise<number> {
  const client = await connectPg(server.databaseUrl);
  try {
    return (await client.query('select count(*)::int as n from user_session where user_id = $1', [userId])).rows[0].n;
  } finally {
    await client.end();
  }
}

t.test('start, approve in a signed-in session, exchange with the verifier: a session of the approver', async (t) => {
  const user = await person();
  const { verifier, challenge } = pkce();
  const started = await start({ codeChallenge: challenge, codeChallengeMethod: 'S256', clientName: 'Launcher 2.3' });
  t.equal(started.status, 201);
  t.match(started.body, { identifier: /^[A-Z0-9]{4}-[A-Z0-9]{4}$/, userId: null, codeChallenge: challenge, skipAuth: false, approved: false, clientName: 'Launcher 2.3' });
  const minutes = (Date.parse(started.body.expires) - Date.parse(started.body.createdAt)) / 60_000;
  t.equal(minutes, 10);
  const code = started.body.identifier as string;

  expectError(t, await exchange(code, verifier), 409, 'error.launcher.pending');
  const seen = await server.media('GET', `/v1/auth/launcher/codes/${code.toLowerCase()}`, user.token);
  t.match(seen.body, { identifier: code, clientName: 'Launcher 2.3' });
  const approved = await server.media('POST', `/v1/auth/launcher/codes/${code}/approve`, user.token);
  t.equal(approved.status, 200);
  t.match(approved.body, { userId: user.userId, approved: true, skipAuth: false });

  const before = await sessionsOf(user.userId);
  const signedIn = await exchange(code, verifier);
  t.equal(signedIn.status, 200);
  t.match(signedIn.body, { token: /^tss_/, user: { id: user.userId }, session: { method: 'launcher' } });
  t.equal((await server.media('GET', '/v1/users/me', signedIn.body.token)).body.id, user.userId);
  t.equal(await sessionsOf(user.userId), before + 1);

  expectError(t, await exchange(code, verifier), 400, 'error.launcher.invalidCode');
  t.equal(await sessionsOf(user.userId), before + 1, 'a reused code makes no session');
  expectError(t, await server.media('GET', `/v1/auth/launcher/codes/${code}`, user.token), 404, 'error.notFound');
});

t.test('a wrong verifier, an unknown code and an expired code get no token', async (t) => {
  const user = await person();
  const { verifier, challenge } = pkce();
  const code = (await start({ codeChallenge: challenge })).body.identifier as string;
  await server.media('POST', `/v1/auth/launcher/codes/${code}/approve`, user.token);
  const before = await sessionsOf(user.userId);
  expectError(t, await exchange(code, pkce().verifier), 400, 'error.launcher.invalidVerifier');
  expectError(t, await exchange('AAAA-AAAA', verifier), 400, 'error.launcher.invalidCode');
  expectError(t, await exchange('not a code', verifier), 400, 'error.launcher.invalidCode');
  expectError(t, await exchange(code, 'short'), 400, 'error.badRequest');
  t.equal(await sessionsOf(user.userId), before);

  const client = await connectPg(server.databaseUrl);
  await client.query(`update auth_session_code set expires = now() - interval '1 second' where identifier = $1`, [code]);
  await client.end();
  expectError(t, await exchange(code, verifier), 400, 'error.launcher.invalidCode');
  t.equal(await sessionsOf(user.userId), before);
});

t.test('two racing exchanges: one session', async (t) => {
  const user = await person();
  const { verifier, challenge } = pkce();
  const code = (await start({ codeChallenge: challenge })).body.identifier as string;
  await server.media('POST', `/v1/auth/launcher/codes/${code}/approve`, user.token);
  const before = await sessionsOf(user.userId);
  const answers = await Promise.all([exchange(code, verifier), exchange(code, verifier), exchange(code, verifier)]);
  t.same(answers.map((a) => a.status).sort(), [200, 400, 400]);
  t.equal(await sessionsOf(user.userId), before + 1);
});

t.test('started with a session token: approved at once (skipAuth) and exchanged without anyone approving', async (t) => {
  const user = await person();
  const { verifier, challenge } = pkce();
  const started = await start({ codeChallenge: challenge, clientName: 'Game server 7' }, user.token);
  t.match(started.body, { userId: user.userId, skipAuth: true, approved: true });
  const signedIn = await exchange(started.body.identifier, verifier);
  t.equal(signedIn.status, 200);
  t.equal(signedIn.body.user.id, user.userId);
  expectError(t, await start({ codeChallenge: challenge }, `tss_${'x'.repeat(43)}`), 401, 'error.unauthorized');
});

t.test('approval refusals; a disabled approver gets no session', async (t) => {
  const user = await person();
  const other = await person();
  const { verifier, challenge } = pkce();
  const code = (await start({ codeChallenge: challenge })).body.identifier as string;
  expectError(t, await server.request('POST', `/v1/auth/launcher/codes/${code}/approve`), 401, 'error.unauthorized');
  expectError(t, await server.media('POST', '/v1/auth/launcher/codes/AAAA-AAAA/approve', user.token), 404, 'error.notFound');
  t.equal((await server.media('POST', `/v1/auth/launcher/codes/${code}/approve`, user.token)).status, 200);
  expectError(t, await server.media('POST', `/v1/auth/launcher/codes/${code}/approve`, other.token), 409, 'error.launcher.alreadyApproved');
  await server.admin('POST', `/v1/admin/users/${user.userId}/disable`);
  expectError(t, await exchange(code, verifier), 403, 'error.user.disabled');
  expectError(t, await start({ codeChallenge: 'too-short' }), 400, 'error.badRequest');
  expectError(t, await start({ codeChallenge: challenge, codeChallengeMethod: 'plain' }), 400, 'error.badRequest');
});

t.test('failed exchanges are throttled per client address', async (t) => {
  const strict = await startTestServer(t, { settings: { AUTH_FAILURE_LIMIT_POINTS: 3 } });
  for (let i = 0; i < 3; i++) {
    t.equal((await strict.request('POST', '/v1/auth/launcher/token', { body: { code: 'AAAA-AAAA', codeVerifier: pkce().verifier } })).status, 400);
  }
  const refused = await strict.request('POST', '/v1/auth/launcher/token', { body: { code: 'AAAA-AAAA', codeVerifier: pkce().verifier } });
  expectError(t, refused, 429, 'error.tooManyRequests');
  t.ok(Number(refused.headers.get('retry-after')) > 0);
});
