import t from 'tap';
import { accountRows, bearer, callback, signUp, sql } from '../helpers/accounts.ts';
import { startFakeDiscord, type DiscordUser } from '../helpers/fake-discord.ts';
import { startOidcIssuer } from '../helpers/oidc-issuer.ts';
import { expectError, startTestServer } from '../helpers/server.ts';

const discord = await startFakeDiscord(t);
const issuer = await startOidcIssuer(t);
const server = await startTestServer(t, {
  settings: {
    RATE_LIMIT_POINTS: 100_000,
    API_KEY_CACHE_SECONDS: 0,
    OAUTH_DISCORD_CLIENT_ID: discord.clientId,
    OAUTH_DISCORD_CLIENT_SECRET: discord.clientSecret,
    OAUTH_DISCORD_API_URL: discord.apiUrl,
    OAUTH_DISCORD_AUTHORIZE_URL: discord.authorizeUrl,
    OAUTH_GOOGLE_CLIENT_ID: issuer.clientId,
    OAUTH_GOOGLE_CLIENT_SECRET: issuer.clientSecret,
    OAUTH_GOOGLE_ISSUER: issuer.issuer,
  },
});
issuer.allowRedirect(`${server.baseUrl}/v1/auth/oauth/google/callback`);

const MC_UUID = '069a79f4-44e9-4726-a5be-fca90e38aaf5';
const accountsOf = (token: string) => server.media('GET', '/v1/users/me/accounts', token);
const link = (token: string, body: unknown) => server.media('POST', '/v1/users/me/accounts', token, { body });
const unlink = (token: string, providerId: string) => server.media('DELETE', `/v1/users/me/accounts/${providerId}`, token);
let discordIds = 4_000_000_000_000_000;

async function linkDiscord(token: string, username = 'gamer') {
  const started = await server.request('POST', '/v1/auth/oauth/discord/start', { body: {}, headers: bearer(token) });
  const user: DiscordUser = { id: String(++discordIds), username, email: `${username}${discordIds}@example.com`, verified: true };
  const answer = await callback(server, await discord.authorize(started.body.authorizationUrl, { as: user }));
  if (answer.status !== 200) throw new Error(`discord link failed: ${JSON.stringify(answer.body)}`);
  return answer.body;
}

async function linkGoogle(token: string, sub: string) {
  issuer.account(sub, { email: `${sub}@example.org`, email_verified: true, name: sub });
  const started = await server.request('POST', '/v1/auth/oauth/google/start', { body: {}, headers: bearer(token) });
  const answer = await callback(server, await issuer.authorize(started.body.authorizationUrl, { as: sub }));
  if (answer.status !== 200) throw new Error(`google link failed: ${JSON.stringify(answer.body)}`);
}

t.test('manual game accounts: link, change, list; validated per providerId', async (t) => {
  const user = await signUp(server);
  const created = await link(user.token, { providerId: 'minecraft-manual', data: { username: 'Notch', targetId: MC_UUID.replace(/-/g, '').toUpperCase() } });
  t.equal(created.status, 201);
  t.same(created.body, { accountId: MC_UUID, providerId: 'minecraft-manual', data: { username: 'Notch', targetId: MC_UUID } }, 'the UUID normalised');
  const hytale = await link(user.token, { providerId: 'hytale-manual', accountId: '11111111-2222-3333-4444-555555555555', data: { username: 'Kweebec_1', targetId: '11111111-2222-3333-4444-555555555555' } });
  t.equal(hytale.status, 201);
  const changed = await link(user.token, { providerId: 'minecraft-manual', data: { username: 'Notch2', targetId: MC_UUID } });
  t.equal(changed.status, 200, 'a second post changes the user\'s account');
  t.same((await accountsOf(user.token)).body.map((a: any) => [a.providerId, a.data?.username ?? null]),
    [['credential', null], ['minecraft-manual', 'Notch2'], ['hytale-manual', 'Kweebec_1']]);

  const before = await accountRows(server);
  const invalid: [unknown, number, string][] = [
    [{ providerId: 'minecraft-manual', data: { username: 'Notch' } }, 400, 'error.missingArgument.data.targetId'],
    [{ providerId: 'minecraft-manual', data: { targetId: MC_UUID } }, 400, 'error.missingArgument.data.username'],
    [{ providerId: 'minecraft-manual' }, 400, 'error.missingArgument.data'],
    [{ providerId: 'minecraft-manual', data: { username: 'no spaces', targetId: MC_UUID } }, 400, 'error.badRequest'],
    [{ providerId: 'minecraft-manual', data: { username: 'ab', targetId: MC_UUID } }, 400, 'error.badRequest'],
    [{ providerId: 'minecraft-manual', data: { username: 'a'.repeat(17), targetId: MC_UUID } }, 400, 'error.badRequest'],
    [{ providerId: 'hytale-manual', data: { username: 'Kweebec', targetId: 'not-a-uuid' } }, 400, 'error.badRequest'],
    [{ providerId: 'hytale-manual', data: { username: 'Kweebec', targetId: MC_UUID, extra: 1 } }, 400, 'error.badRequest'],
    [{ providerId: 'minecraft-manual', accountId: '00000000-0000-0000-0000-000000000000', data: { username: 'Notch', targetId: MC_UUID } }, 400, 'error.badRequest'],
    [{ providerId: 'discord', data: { username: 'x' } }, 400, 'error.badRequest'],
    [{ providerId: 'google', data: { email: 'x@example.org' } }, 400, 'error.badRequest'],
    [{ providerId: 'credential', data: null }, 400, 'error.badRequest'],
    [{ providerId: 'steam', data: {} }, 400, 'error.badRequest'],
    [{ data: { username: 'Notch', targetId: MC_UUID } }, 400, 'error.missingArgument.providerId'],
  ];
  for (const [body, status, key] of invalid) expectError(t, await link(user.token, body), status, key);
  t.same(await accountRows(server), before, 'nothing stored');

  const other = await signUp(server);
  expectError(t, await link(other.token, { providerId: 'minecraft-manual', data: { username: 'Thief', targetId: MC_UUID } }), 409, 'error.account.taken');
  t.same((await accountsOf(other.token)).body.map((a: any) => a.providerId), ['credential']);
  expectError(t, await server.request('GET', '/v1/users/me/accounts'), 401, 'error.unauthorized');
  const team = await server.createTeam('KeyHolders');
  expectError(t, await accountsOf(team.key), 401, 'error.unauthorized');
});

t.test('unlink: never the last way to sign in; game accounts do not count', async (t) => {
  const user = await signUp(server);
  await link(user.token, { providerId: 'hytale-manual', data: { username: 'Trork', targetId: '22222222-2222-3333-4444-555555555555' } });
  expectError(t, await unlink(user.token, 'credential'), 409, 'error.account.lastSignIn');
  expectError(t, await unlink(user.token, 'discord'), 404, 'error.notFound');
  t.equal((await unlink(user.token, 'hytale-manual')).status, 204);

  await linkDiscord(user.token, 'unlinker');
  t.equal((await unlink(user.token, 'credential')).status, 204, 'discord remains');
  expectError(t, await server.request('POST', '/v1/auth/sign-in', { body: { login: user.username, password: user.password } }), 401, 'error.unauthorized');
  expectError(t, await unlink(user.token, 'discord'), 409, 'error.account.lastSignIn');
  t.same((await accountsOf(user.token)).body.map((a: any) => a.providerId), ['discord']);

  await linkGoogle(user.token, 'google-unlinker');
  t.equal((await unlink(user.token, 'discord')).status, 204, 'google remains');
  expectError(t, await unlink(user.token, 'google'), 409, 'error.account.lastSignIn');
  t.same((await sql(server, 'select provider_id from account where user_id = $1', [user.userId])).map((r) => r.provider_id), ['google']);

  // A password again (no current one to give): credential is back, and google may go.
  const set = await server.media('POST', '/v1/users/me/password', user.token, { body: { newPassword: 'another long pass phrase' } });
  t.equal(set.status, 200);
  t.equal((await unlink(set.body.token, 'google')).status, 204);
  t.equal((await server.request('POST', '/v1/auth/sign-in', { body: { login: user.username, password: 'another long pass phrase' } })).status, 200);
});

t.test('join requirements are met by linked accounts; team join info lists them', async (t) => {
  const team = await server.createTeam('Requiring');
  const group = (await server.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Players', permissions: [] })).body;
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { multiUseInvites: true });
  const invite = (await server.media('POST', `/v1/teams/${team.teamId}/invites`, team.key, { body: { groupId: group.id, isMultiUse: true } })).body;
  const require = (requirements: Record<string, boolean>) => server.media('PATCH', `/v1/teams/${team.teamId}`, team.key, { body: { requirements } });
  const accept = (token: string, body: unknown = {}) => server.media('POST', `/v1/invites/${invite.id}/accept`, token, { body });
  const members = async () => (await sql(server, 'select count(*)::int as n from team_member where team_id = $1', [team.teamId]))[0].n;

  const cases: { requirement: string; meet: (token: string) => Promise<unknown> }[] = [
    { requirement: 'minecraft', meet: (token) => link(token, { providerId: 'minecraft-manual', data: { username: 'Steve', targetId: crypto.randomUUID() } }) },
    { requirement: 'hytale', meet: (token) => link(token, { providerId: 'hytale-manual', data: { username: 'Varyn', targetId: crypto.randomUUID() } }) },
    { requirement: 'discord', meet: (token) => linkDiscord(token, 'joiner') },
    { requirement: 'google', meet: (token) => linkGoogle(token, `google-joiner-${crypto.randomUUID()}`) },
  ];
  for (const { requirement, meet } of cases) {
    await require({ discord: false, google: false, minecraft: false, hytale: false, [requirement]: true });
    const user = await signUp(server);
    const info = await server.media('GET', `/v1/invites/${invite.id}`, user.token);
    t.equal(info.status, 200);
    t.match(info.body, { id: team.teamId, name: 'Requiring', requirements: { [requirement]: true } });
    const before = await members();
    const refused = await accept(user.token);
    expectError(t, refused, 403, 'error.forbidden');
    t.equal(refused.body.value, requirement, `${requirement} unmet`);
    t.equal(await members(), before, 'no member');
    await meet(user.token);
    const joined = await accept(user.token, { name: `m_${requirement}` });
    t.equal(joined.status, 201, `${requirement} met`);
    t.match(joined.body, { teamId: team.teamId, userId: user.userId, name: `m_${requirement}`, mainGroupId: group.id });
    const after = await server.media('GET', `/v1/invites/${invite.id}`, user.token);
    t.ok(after.body.connections.length >= 2, 'connections list the linked accounts');
    t.notMatch(JSON.stringify(after.body.connections), /token|password/i);
    const teamInfo = await server.media('GET', `/v1/teams/${team.teamId}/join-info`, user.token);
    t.same(teamInfo.body.connections, after.body.connections, 'the team route lists them too for a session');
  }

  // The operator route checks the same requirements.
  await require({ discord: false, google: false, minecraft: true, hytale: true });
  const user = await signUp(server);
  await link(user.token, { providerId: 'minecraft-manual', data: { username: 'Alex', targetId: crypto.randomUUID() } });
  const partial = await server.admin('POST', `/v1/admin/invites/${invite.id}/accept`, { userId: user.userId });
  expectError(t, partial, 403, 'error.forbidden');
  t.equal(partial.body.value, 'hytale');
  await link(user.token, { providerId: 'hytale-manual', data: { username: 'Alex', targetId: crypto.randomUUID() } });
  t.equal((await server.admin('POST', `/v1/admin/invites/${invite.id}/accept`, { userId: user.userId })).status, 201);
  expectError(t, await accept(user.token), 409, 'error.conflict');

  t.same((await server.media('GET', `/v1/teams/${team.teamId}/join-info`, team.key)).body.connections, [], 'a key has no connections');
  expectError(t, await server.media('GET', `/v1/invites/${crypto.randomUUID()}`, user.token), 404, 'error.notFound');
  expectError(t, await server.media('POST', `/v1/invites/${invite.id}/accept`, team.key, { body: {} }), 401, 'error.unauthorized');
  expectError(t, await accept(user.token, { userId: user.userId }), 400, 'error.badRequest');
});
