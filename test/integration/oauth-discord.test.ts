import t from 'tap';
import { accountRows, bearer, callback, signUp, sql } from '../helpers/accounts.ts';
import { startFakeDiscord, type DiscordUser } from '../helpers/fake-discord.ts';
import { expectError, startTestServer } from '../helpers/server.ts';

// A local server speaking Discord's documented OAuth 2 token and /users/@me endpoints.
const discord = await startFakeDiscord(t);
const server = await startTestServer(t, {
  settings: {
    RATE_LIMIT_POINTS: 100_000,
    API_KEY_CACHE_SECONDS: 0,
    OAUTH_DISCORD_CLIENT_ID: discord.clientId,
    OAUTH_DISCORD_CLIENT_SECRET: discord.clientSecret,
    OAUTH_DISCORD_API_URL: discord.apiUrl,
    OAUTH_DISCORD_AUTHORIZE_URL: discord.authorizeUrl,
  },
});

const nelly: DiscordUser = { id: '80351110224678912', username: 'nelly', global_name: 'Nelly', email: 'nelly@example.com', verified: true };

const start = (token?: string) => server.request('POST', '/v1/auth/oauth/discord/start', { body: {}, headers: token ? bearer(token) : {} });

async function approve(as: DiscordUser, token?: string) {
  const started = await start(token);
  if (started.status !== 200) throw new Error(`start failed: ${JSON.stringify(started.body)}`);
  return discord.authorize(started.body.authorizationUrl, { as });
}

t.test('only discord is offered besides credential; google is not configured', async (t) => {
  t.same((await server.request('GET', '/v1/auth/providers')).body.providers.map((p: any) => p.id), ['credential', 'discord']);
  expectError(t, await server.request('POST', '/v1/auth/oauth/google/start', { body: {} }), 404, 'error.notFound');
});

t.test('sign-in: the code is exchanged with the secret and the PKCE verifier; user and account made; second sign-in finds them', async (t) => {
  const before = await accountRows(server);
  const started = await start();
  const url = new URL(started.body.authorizationUrl);
  t.equal(`${url.origin}${url.pathname}`, discord.authorizeUrl);
  t.equal(url.searchParams.get('scope'), 'identify email');
  t.equal(url.searchParams.get('code_challenge_method'), 'S256');
  t.equal(url.searchParams.get('nonce'), null, 'no OpenID Connect nonce');
  const [row] = await sql(server, 'select * from oauth_state order by created_at desc limit 1');
  t.equal(row.nonce, null);

  const signedIn = await callback(server, await discord.authorize(url.href, { as: nelly }));
  t.equal(signedIn.status, 200);
  t.match(signedIn.body, { token: /^tss_/, session: { method: 'discord' }, user: { username: 'nelly', email: 'nelly@example.com', isEmailVerified: true } });
  const exchange = discord.tokenRequests.at(-1)!;
  t.equal(exchange.get('code_verifier'), row.code_verifier, 'the stored verifier was sent');
  t.equal(exchange.get('client_secret'), discord.clientSecret);
  t.equal(exchange.get('redirect_uri'), `${server.baseUrl}/v1/auth/oauth/discord/callback`);
  t.equal((await server.media('GET', '/v1/users/me', signedIn.body.token)).body.id, signedIn.body.user.id, 'the session works');
  const [account] = await sql(server, 'select * from account where user_id = $1', [signedIn.body.user.id]);
  t.match(account, { provider_id: 'discord', account_id: nelly.id, data: { username: 'nelly' }, scope: 'identify email', id_token: null });
  t.ok(account.access_token && account.refresh_token && account.access_token_expires_at, 'tokens and expiry stored');
  t.same(await accountRows(server), { ...before, users: before.users + 1, accounts: before.accounts + 1, sessions: before.sessions + 1 });

  const again = await callback(server, await approve({ ...nelly, username: 'nelly_renamed' }));
  t.equal(again.body.user.id, signedIn.body.user.id, 'the same user');
  const [updated] = await sql(server, 'select data from account where user_id = $1', [signedIn.body.user.id]);
  t.same(updated.data, { username: 'nelly_renamed' }, 'data follows the provider');
  const listed = await server.media('GET', '/v1/users/me/accounts', signedIn.body.token);
  t.same(listed.body, [{ accountId: nelly.id, providerId: 'discord', data: { username: 'nelly_renamed' } }]);
  t.notMatch(JSON.stringify(listed.body), /access|refresh|token/i, 'no tokens');
});

t.test('a Discord user without an email, or with an unverified one', async (t) => {
  const quiet = await callback(server, await approve({ id: '1000000000000000001', username: 'q', email: null, verified: false }));
  t.equal(quiet.status, 200);
  t.match(quiet.body.user, { email: 'discord-1000000000000000001@users.invalid', isEmailVerified: false });
  t.match(quiet.body.user.username, /^discord_q/, 'a too short name is padded');
  const unverified = await callback(server, await approve({ id: '1000000000000000002', username: 'weird.name-éx', email: 'unv@example.com', verified: false }));
  t.match(unverified.body.user, { email: 'unv@example.com', isEmailVerified: false, username: 'weird_name_ex' });
});

t.test('refusals leave nothing: denied, reused, expired, wrong state, email taken, linked elsewhere', async (t) => {
  const other: DiscordUser = { id: '2000000000000000001', username: 'other', email: 'other@example.com', verified: true };
  const before = await accountRows(server);
  const deniedStart = await start();
  const denied = await callback(server, await discord.authorize(deniedStart.body.authorizationUrl, { deny: true }));
  expectError(t, denied, 400, 'error.oauth.providerRefused');
  t.equal(denied.body.value, 'access_denied');

  const late = await approve(other);
  await sql(server, `update oauth_state set expires_at = now() - interval '1 second'`);
  expectError(t, await callback(server, late), 400, 'error.oauth.invalidState');

  const forged = await approve(other);
  forged.searchParams.set('state', 'x'.repeat(43));
  expectError(t, await callback(server, forged), 400, 'error.oauth.invalidState');
  t.same({ ...(await accountRows(server)), states: 0 }, { ...before, states: 0 }, 'no user, account or session');

  const used = await approve(other);
  t.equal((await callback(server, used)).status, 200);
  const afterUse = await accountRows(server);
  expectError(t, await callback(server, used), 400, 'error.oauth.invalidState');
  t.same(await accountRows(server), afterUse, 'a replay creates nothing');

  const owner = await signUp(server, { email: 'Taken@Example.com' });
  const mid = await accountRows(server);
  const taken = await callback(server, await approve({ id: '2000000000000000002', username: 'taker', email: 'taken@example.com', verified: true }));
  expectError(t, taken, 409, 'error.account.emailTaken');
  expectError(t, await callback(server, await approve(other, owner.token)), 409, 'error.account.linkedElsewhere');
  t.same({ ...(await accountRows(server)), states: 0 }, { ...mid, states: 0 }, 'no user, account or session');
});

t.test('two callbacks racing with one state: one signs in, the other is refused', async (t) => {
  const racer: DiscordUser = { id: '5000000000000000001', username: 'racer', email: 'racer@example.com', verified: true };
  const back = await approve(racer);
  const answers = await Promise.all([callback(server, back), callback(server, back)]);
  t.same(answers.map((a) => a.status).sort(), [200, 400]);
  t.equal((await sql(server, 'select count(*)::int as n from account where account_id = $1', [racer.id]))[0].n, 1);
  t.equal(discord.tokenRequests.filter((form) => form.get('code') === back.searchParams.get('code')).length, 1, 'the code was exchanged once');
});

t.test('link flow: the signed-in user gets the discord account, then signs in with it', async (t) => {
  const user = await signUp(server);
  const mine: DiscordUser = { id: '3000000000000000001', username: 'linker', email: 'linker-discord@example.com', verified: true };
  const back = await approve(mine, user.token);
  const [row] = await sql(server, 'select link_user_id from oauth_state order by created_at desc limit 1');
  t.equal(row.link_user_id, user.userId, 'the round remembers whom to link to');
  const linked = await callback(server, back);
  t.equal(linked.status, 200);
  t.equal(linked.body.user.id, user.userId);
  t.equal(linked.body.user.email, user.email, 'the user\'s own address is kept');
  const signedIn = await callback(server, await approve(mine));
  t.equal(signedIn.body.user.id, user.userId);
  expectError(t, await callback(server, await approve({ ...mine, id: '3000000000000000002' }, user.token)), 409, 'error.account.providerLinked');
});
