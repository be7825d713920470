import t from 'tap';
import { accountRows, bearer, callback, signUp, sql } from '../helpers/accounts.ts';
import { startOidcIssuer } from '../helpers/oidc-issuer.ts';
import { expectError, startTestServer } from '../helpers/server.ts';
import { assertAnswer } from '../helpers/openapi-answers.ts';

// A real OpenID Connect provider (oidc-provider) stands in for Google.
const issuer = await startOidcIssuer(t);
const server = await startTestServer(t, {
  settings: {
    RATE_LIMIT_POINTS: 100_000,
    API_KEY_CACHE_SECONDS: 0,
    OAUTH_GOOGLE_CLIENT_ID: issuer.clientId,
    OAUTH_GOOGLE_CLIENT_SECRET: issuer.clientSecret,
    OAUTH_GOOGLE_ISSUER: issuer.issuer,
    CORS_ORIGINS: 'https://app.example.com',
  },
});
issuer.allowRedirect(`${server.baseUrl}/v1/auth/oauth/google/callback`);
issuer.account('google-ada', { email: 'ada@example.org', email_verified: true, name: 'Ada Lovelace' });
issuer.account('google-bob', { email: 'bob@example.org', email_verified: false, name: 'Bob' });

const start = (body: unknown = {}, token?: string) =>
  server.request('POST', '/v1/auth/oauth/google/start', { body, headers: token ? bearer(token) : {} });

async function signInAs(sub: string, options: { token?: string } = {}) {
  const started = await start({}, options.token);
  if (started.status !== 200) throw new Error(`start failed: ${JSON.stringify(started.body)}`);
  return callback(server, await issuer.authorize(started.body.authorizationUrl, { as: sub }));
}

t.test('the providers list names credential and google, not the unconfigured discord', async (t) => {
  const listed = await server.request('GET', '/v1/auth/providers');
  t.equal(listed.status, 200);
  t.same(listed.body.providers, [{ id: 'credential', type: 'credential' }, { id: 'google', type: 'oauth' }]);
  const before = await accountRows(server);
  expectError(t, await server.request('POST', '/v1/auth/oauth/discord/start', { body: {} }), 404, 'error.notFound');
  expectError(t, await server.request('POST', '/v1/auth/oauth/github/start', { body: {} }), 404, 'error.notFound');
  expectError(t, await server.request('GET', '/v1/auth/oauth/discord/callback?code=x&state=y'), 404, 'error.notFound');
  t.same(await accountRows(server), before, 'nothing stored');
});

t.test('the start stores only the state\'s hash, a verifier and a nonce; the URL asks for PKCE S256', async (t) => {
  const started = await start();
  t.equal(started.status, 200);
  t.equal(started.headers.get('cache-control'), 'no-store');
  const url = new URL(started.body.authorizationUrl);
  t.equal(url.origin, issuer.issuer);
  t.equal(url.searchParams.get('code_challenge_method'), 'S256');
  t.equal(url.searchParams.get('redirect_uri'), `${server.baseUrl}/v1/auth/oauth/google/callback`);
  t.match(url.searchParams.get('scope'), /\bopenid\b.*\bemail\b/);
  const state = url.searchParams.get('state')!;
  const [row] = await sql(server, 'select * from oauth_state where provider_id = $1 order by created_at desc limit 1', ['google']);
  t.not(row.state_hash, state, 'not the state itself');
  t.equal(row.state_hash, (await import('node:crypto')).createHash('sha256').update(state).digest('hex'));
  t.equal(row.nonce, url.searchParams.get('nonce'));
  t.ok(row.code_verifier.length >= 43);
  t.equal(row.link_user_id, null);
  const minutes = (new Date(row.expires_at).getTime() - Date.now()) / 60_000;
  t.ok(minutes > 9 && minutes <= 10, 'expires in 10 minutes');
});

t.test('first sign-in makes the user and its google account; the token works; the second finds the same user', async (t) => {
  const before = await accountRows(server);
  const first = await signInAs('google-ada');
  t.equal(first.status, 200);
  t.equal(first.headers.get('cache-control'), 'no-store');
  t.match(first.body, { token: /^tss_/, session: { method: 'google' }, user: { email: 'ada@example.org', isEmailVerified: true, username: 'Ada_Lovelace' } });
  t.ok(first.body.user.emailVerified, 'verified at');
  const me = await server.media('GET', '/v1/users/me', first.body.token);
  t.equal(me.status, 200);
  t.equal(me.body.id, first.body.user.id);
  t.same(await accountRows(server), { ...before, users: before.users + 1, accounts: before.accounts + 1, sessions: before.sessions + 1 }, 'one user, one account, one session; the round consumed');
  const [account] = await sql(server, 'select * from account where user_id = $1', [first.body.user.id]);
  t.match(account, { provider_id: 'google', account_id: 'google-ada', type: 'oauth', data: { email: 'ada@example.org' }, password: null });
  t.ok(account.access_token && account.id_token, 'tokens stored');
  t.ok(account.access_token_expires_at, 'with their expiry');

  const accounts = await server.media('GET', '/v1/users/me/accounts', first.body.token);
  t.same(accounts.body, [{ accountId: 'google-ada', providerId: 'google', data: { email: 'ada@example.org' } }], 'minimal info, no tokens');

  const second = await signInAs('google-ada');
  t.equal(second.status, 200);
  t.equal(second.body.user.id, first.body.user.id, 'the same user');
  t.not(second.body.token, first.body.token);
  t.equal((await accountRows(server)).users, before.users + 1, 'no second user');
});

t.test('an unverified address stays unverified; a taken username gets a suffix', async (t) => {
  await signUp(server, { username: 'Bob' });
  const signedIn = await signInAs('google-bob');
  t.equal(signedIn.status, 200);
  t.match(signedIn.body.user, { email: 'bob@example.org', isEmailVerified: false, emailVerified: null });
  t.match(signedIn.body.user.username, /^Bob_\d+$/);
});

t.test('returnTo: 302 with the session and the clientState in the fragment; a foreign origin is refused at the start', async (t) => {
  const before = await accountRows(server);
  expectError(t, await start({ returnTo: 'https://evil.example.net/landing' }), 400, 'error.badRequest');
  expectError(t, await start({ returnTo: 'not a url' }), 400, 'error.badRequest');
  t.same(await accountRows(server), before, 'no state stored');

  expectError(t, await start({ clientState: 'a'.repeat(32) }), 400, 'error.badRequest');
  expectError(t, await start({ returnTo: 'https://app.example.com/', clientState: 'short' }), 400, 'error.badRequest');
  t.same(await accountRows(server), before, 'no state stored');
  const clientState = 'kept-by-the-app-0123456789abcdef';
  const started = await start({ returnTo: 'https://app.example.com/signed-in?x=1', clientState });
  t.equal(started.status, 200);
  const back = await issuer.authorize(started.body.authorizationUrl, { as: 'google-ada' });
  const response = await fetch(back, { redirect: 'manual' });
  const text = await response.text();
  assertAnswer({ method: 'GET', path: back.pathname, status: response.status, contentType: response.headers.get('content-type'), text });
  t.equal(response.status, 302);
  const location = new URL(response.headers.get('location')!);
  t.equal(`${location.origin}${location.pathname}${location.search}`, 'https://app.example.com/signed-in?x=1', 'the query is untouched');
  const fragment = new URLSearchParams(location.hash.slice(1));
  t.match(fragment.get('token'), /^tss_/);
  t.ok(fragment.get('expiresAt'));
  t.equal(fragment.get('clientState'), clientState, 'the app\'s value comes back');
  t.equal((await server.media('GET', '/v1/users/me', fragment.get('token')!)).body.email, 'ada@example.org');

  const own = await start({ returnTo: `${server.baseUrl}/done` });
  t.equal(own.status, 200, 'the service\'s own origin is allowed');
});

t.test('refusals leave no user, account or session: reuse, expiry, wrong state, provider error', async (t) => {
  issuer.account('google-carol', { email: 'carol@example.org', email_verified: true, name: 'Carol' });
  // State reuse: the first callback consumes it.
  const started = await start();
  const back = await issuer.authorize(started.body.authorizationUrl, { as: 'google-carol' });
  const used = await callback(server, back);
  t.equal(used.status, 200);
  const afterFirst = await accountRows(server);
  expectError(t, await callback(server, back), 400, 'error.oauth.invalidState');
  t.same(await accountRows(server), afterFirst, 'a replay creates nothing');

  issuer.account('google-dave', { email: 'dave@example.org', email_verified: true, name: 'Dave' });
  const before = await accountRows(server);

  // Expired: the round outlived its 10 minutes.
  const late = await start();
  const lateBack = await issuer.authorize(late.body.authorizationUrl, { as: 'google-dave' });
  await sql(server, `update oauth_state set expires_at = now() - interval '1 second' where provider_id = 'google'`);
  expectError(t, await callback(server, lateBack), 400, 'error.oauth.invalidState');

  // A state the service never issued (and a callback without one).
  const other = await start();
  const otherBack = await issuer.authorize(other.body.authorizationUrl, { as: 'google-dave' });
  const forged = new URL(otherBack);
  forged.searchParams.set('state', 'forged-state-value');
  expectError(t, await callback(server, forged), 400, 'error.oauth.invalidState');
  forged.searchParams.delete('state');
  expectError(t, await callback(server, forged), 400, 'error.oauth.invalidState');
  // The code of that round with a state of another round: the provider's check (state) and the exchange fail.
  const third = await start();
  const swapped = new URL(otherBack);
  swapped.searchParams.set('state', new URL(third.body.authorizationUrl).searchParams.get('state')!);
  const swappedAnswer = await callback(server, swapped);
  expectError(t, swappedAnswer, 400, 'error.oauth.providerRefused');

  // The user denies at the provider.
  const denied = await start();
  const deniedBack = await issuer.authorize(denied.body.authorizationUrl, { deny: true });
  t.equal(deniedBack.searchParams.get('error'), 'access_denied');
  const refused = await callback(server, deniedBack);
  expectError(t, refused, 400, 'error.oauth.providerRefused');
  t.equal(refused.body.value, 'access_denied');
  t.same(await accountRows(server), { ...before, states: (await accountRows(server)).states }, 'no user, account or session');
  t.equal((await sql(server, 'select 1 from "user" where email = $1', ['dave@example.org'])).length, 0);
});

t.test('an email of another user: 409, never linked by address; that user signs in and links', async (t) => {
  const existing = await signUp(server, { email: 'Eve@Example.org' });
  issuer.account('google-eve', { email: 'eve@example.org', email_verified: true, name: 'Eve' });
  const before = await accountRows(server);
  const refused = await signInAs('google-eve');
  expectError(t, refused, 409, 'error.account.emailTaken');
  t.same(await accountRows(server), before, 'nothing created');

  const linked = await signInAs('google-eve', { token: existing.token });
  t.equal(linked.status, 200);
  t.equal(linked.body.user.id, existing.userId, 'linked to the signed-in user');
  const accounts = (await server.media('GET', '/v1/users/me/accounts', existing.token)).body;
  t.same(accounts.map((a: any) => a.providerId).sort(), ['credential', 'google']);
  const again = await signInAs('google-eve');
  t.equal(again.body.user.id, existing.userId, 'and now signs in with google');
});

t.test('link refusals: an account of another user, a second google account; a bad token on the start', async (t) => {
  const frank = await signUp(server);
  const before = await accountRows(server);
  const elsewhere = await signInAs('google-ada', { token: frank.token });
  expectError(t, elsewhere, 409, 'error.account.linkedElsewhere');
  t.same((await accountRows(server)).accounts, before.accounts);

  issuer.account('google-frank', { email: 'frank@example.org', email_verified: true, name: 'Frank' });
  issuer.account('google-frank2', { email: 'frank2@example.org', email_verified: true, name: 'Frank' });
  t.equal((await signInAs('google-frank', { token: frank.token })).status, 200);
  const mid = await accountRows(server);
  expectError(t, await signInAs('google-frank2', { token: frank.token }), 409, 'error.account.providerLinked');
  const after = await accountRows(server);
  t.same({ ...after, states: 0 }, { ...mid, states: 0 }, 'nothing created');

  expectError(t, await start({}, 'tss_notarealtoken0000000000000000000000000000'), 401, 'error.unauthorized');
});

t.test('a disabled user: 403 and no session', async (t) => {
  issuer.account('google-gina', { email: 'gina@example.org', email_verified: true, name: 'Gina' });
  const gina = await signInAs('google-gina');
  t.equal((await server.admin('POST', `/v1/admin/users/${gina.body.user.id}/disable`)).status, 200);
  const before = await accountRows(server);
  expectError(t, await signInAs('google-gina'), 403, 'error.user.disabled');
  t.same({ ...(await accountRows(server)), states: 0 }, { ...before, states: 0 });
});
