import t from 'tap';
import { DiscordStatusService } from '../../src/domain/members/discord-status.service.ts';
import { callback, join, signUp, sql } from '../helpers/accounts.ts';
import { startFakeDiscord, type DiscordGuildMember, type DiscordUser } from '../helpers/fake-discord.ts';
import { expectError, startTestServer } from '../helpers/server.ts';
import { memberWithKey } from '../helpers/team-admin.ts';

// Discord is the local fake (test/helpers/fake-discord.ts): the status is what the sign-in read, never a live call.
const GUILD = '613425648685547541';
const discord = await startFakeDiscord(t);
const server = await startTestServer(t, {
  settings: {
    RATE_LIMIT_POINTS: 100_000,
    OAUTH_DISCORD_CLIENT_ID: discord.clientId,
    OAUTH_DISCORD_CLIENT_SECRET: discord.clientSecret,
    OAUTH_DISCORD_API_URL: discord.apiUrl,
    OAUTH_DISCORD_AUTHORIZE_URL: discord.authorizeUrl,
    OAUTH_DISCORD_GUILD_ID: GUILD,
  },
});
const team = await server.createTeam('Guildies');
const other = await server.createTeam('Others');
const statusOf = (memberId: string, key = team.key, teamId = team.teamId) => server.media('GET', `/v1/teams/${teamId}/members/${memberId}/discord`, key);
const guild = new Map<string, DiscordGuildMember>();
discord.guildMembers.set(GUILD, guild);

/** Signs in with Discord as `as` and joins the team; answers the user and member ids. */
async function discordMember(as: DiscordUser): Promise<{ userId: string; memberId: string }> {
  const started = await server.request('POST', '/v1/auth/oauth/discord/start', { body: {} });
  const signedIn = await callback(server, await discord.authorize(started.body.authorizationUrl, { as }));
  if (signedIn.status !== 200) throw new Error(`sign-in failed: ${JSON.stringify(signedIn.body)}`);
  const userId = signedIn.body.user.id;
  const existing = await sql(server, 'select id from team_member where team_id = $1 and user_id = $2', [team.teamId, userId]);
  return { userId, memberId: existing[0]?.id ?? (await join(server, team, userId)) };
}

t.test('a member in the guild: the member object as the sign-in read it, roles by id', async (t) => {
  const mira: DiscordUser = { id: '80351110224678913', username: 'mira', global_name: 'Mira the Mod', email: 'mira@example.com', verified: true };
  guild.set(mira.id, { nick: 'Mod Mira', roles: ['41771983423143936', '41771983423143937'], joined_at: '2025-03-01T12:00:00.000000+00:00' });
  const { userId, memberId } = await discordMember(mira);
  t.equal(discord.authorizeScopes.at(-1), 'identify email guilds.members.read', 'the sign-in asks for the guild membership');
  const answer = await statusOf(memberId);
  t.equal(answer.status, 200);
  t.same(answer.body, {
    hasDiscordConnection: true,
    userId,
    member: {
      isMember: true, id: mira.id, username: 'mira', globalName: 'Mira the Mod', displayName: 'Mira the Mod', nick: 'Mod Mira',
      joinedAt: '2025-03-01T12:00:00.000Z', roles: [{ id: '41771983423143936', name: null }, { id: '41771983423143937', name: null }],
    },
  });

  // Discord's answer changes only with the next sign-in: no live call.
  guild.set(mira.id, { nick: null, roles: [], joined_at: '2025-03-01T12:00:00.000000+00:00' });
  t.equal((await statusOf(memberId)).body.member.nick, 'Mod Mira', 'kept until the next sign-in');
  await discordMember(mira);
  t.match((await statusOf(memberId)).body.member, { nick: null, roles: [] }, 'the next sign-in replaces it');

  // An answer Discord could not give leaves what is known.
  discord.guildMemberFailure = 500;
  t.teardown(() => { discord.guildMemberFailure = null; });
  await discordMember(mira);
  t.match((await statusOf(memberId)).body.member, { isMember: true, nick: null });
});

t.test('not in the guild: isMember false; never read: member null; no Discord account: no connection', async (t) => {
  const nomad: DiscordUser = { id: '80351110224678914', username: 'nomad', global_name: null, email: 'nomad@example.com', verified: true };
  const outsider = await discordMember(nomad);
  t.same((await statusOf(outsider.memberId)).body, {
    hasDiscordConnection: true, userId: outsider.userId,
    member: { isMember: false, id: nomad.id, username: 'nomad', globalName: null, displayName: 'nomad', nick: null, joinedAt: null, roles: [] },
  });

  discord.guildMemberFailure = 503;
  t.teardown(() => { discord.guildMemberFailure = null; });
  const unread = await discordMember({ id: '80351110224678915', username: 'quiet', email: 'quiet@example.com', verified: true });
  t.same((await statusOf(unread.memberId)).body, { hasDiscordConnection: true, userId: unread.userId, member: null }, 'the sign-in went on without it');

  const plain = await signUp(server);
  const plainMember = await join(server, team, plain.userId);
  t.same((await statusOf(plainMember)).body, { hasDiscordConnection: false, userId: plain.userId, member: null });
  t.same((await statusOf(team.ownerId)).body.hasDiscordConnection, false, 'the operator-made owner');
});

t.test('read for another guild than the one configured now: unknown (member null)', async (t) => {
  const mira = await sql(server, `select tm.id from team_member tm join account a on a.user_id = tm.user_id where a.provider_id = 'discord' and a.account_id = '80351110224678913'`);
  const elsewhere = new DiscordStatusService({ orm: server.app.services.orm, guildId: '999999999999999999' });
  const status = await elsewhere.get(team.teamId, mira[0].id);
  t.equal(status.hasDiscordConnection, true);
  t.equal(status.member, null);
});

t.test('team.members.view; 404 for another team\'s member, an unknown or a malformed id', async (t) => {
  const [mira] = await sql(server, `select tm.id from team_member tm join account a on a.user_id = tm.user_id where a.provider_id = 'discord' and a.account_id = '80351110224678913'`);
  const viewer = await memberWithKey(server, team.teamId, 'viewer', ['team.members.view']);
  const nobody = await memberWithKey(server, team.teamId, 'nobody', []);
  t.equal((await statusOf(mira.id, viewer.key)).status, 200);
  expectError(t, await statusOf(mira.id, nobody.key), 403, 'error.forbidden');
  expectError(t, await statusOf(mira.id, other.key, other.teamId), 404, 'error.notFound');
  expectError(t, await statusOf(other.ownerId), 404, 'error.notFound');
  expectError(t, await statusOf('6f1c1e3e-8f7a-4c1e-9a51-3f0c2d9b1a77'), 404, 'error.notFound');
  expectError(t, await statusOf('not-a-uuid'), 404, 'error.notFound');
  expectError(t, await statusOf(mira.id, other.key), 401, 'error.unauthorized');
});
