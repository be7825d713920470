import t from 'tap';
import { expectError, startTestServer } from '../helpers/server.ts';
import { memberWithKey, tableSnapshot, teamLogRows } from '../helpers/team-admin.ts';

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
const team = await server.createTeam('Invites');
const elsewhere = await server.createTeam('Elsewhere');
const base = `/v1/teams/${team.teamId}/invites`;
const group = (await server.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Joiners', permissions: ['team.media.view'] })).body;
const strong = (await server.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Strong', permissions: ['team.settings.manage'] })).body;
const inviter = await memberWithKey(server, team.teamId, 'inviter', ['team.invites.manage', 'team.media.view']);
const inviteRows = () => tableSnapshot(server, 'select * from team_invite where team_id = $1 order by id', [team.teamId]);
const lastLog = async () => (await teamLogRows(server, team.teamId)).at(-1)!;
let userCounter = 0;
async function aUser(): Promise<string> {
  const member = await server.admin('POST', `/v1/admin/teams/${elsewhere.teamId}/members`, { name: `user_${++userCounter}`, permissions: [] });
  return member.body.userId;
}
const accept = (inviteId: string, body: unknown) => server.admin('POST', `/v1/admin/invites/${inviteId}/accept`, body);

t.test('create (INVITE_CREATED), list, accept (MEMBER_JOINED) into the group; single use', async (t) => {
  const created = await server.media('POST', base, inviter.key, { body: { groupId: group.id } });
  t.equal(created.status, 201);
  t.match(created.body, { teamId: team.teamId, groupId: group.id, isUsed: false, isMultiUse: false });
  const days = (Date.parse(created.body.expireDate) - Date.now()) / 86_400_000;
  t.ok(days > 6.9 && days <= 7, 'a week by default');
  t.match(await lastLog(), { action: 'INVITE_CREATED', team_member_id: inviter.memberId, target_identifier: created.body.id });
  t.same((await server.media('GET', base, inviter.key)).body.map((i: any) => i.id), [created.body.id]);

  const userId = await aUser();
  const joined = await accept(created.body.id, { userId, name: 'newcomer' });
  t.equal(joined.status, 201);
  t.match(joined.body, { teamId: team.teamId, userId, name: 'newcomer', mainGroupId: group.id });
  t.match(await lastLog(), { action: 'MEMBER_JOINED', team_member_id: joined.body.id, target_identifier: created.body.id });
  t.equal((await server.media('GET', base, inviter.key)).body[0].isUsed, true);
  expectError(t, await accept(created.body.id, { userId: await aUser() }), 404, 'error.notFound');
  expectError(t, await accept(created.body.id, { userId }), 404, 'error.notFound');
});

t.test('two racing accepts of a single-use invite make one member', async (t) => {
  const invite = (await server.media('POST', base, inviter.key, { body: { groupId: group.id } })).body;
  const users = [await aUser(), await aUser(), await aUser()];
  const results = await Promise.all(users.map((userId) => accept(invite.id, { userId })));
  t.same(results.map((r) => r.status).sort(), [201, 404, 404]);
});

t.test('multi-use needs the plan\'s multiUseInvites (402); then many may join; maxMembers 402', async (t) => {
  const before = await inviteRows();
  const refused = await server.media('POST', base, inviter.key, { body: { groupId: group.id, isMultiUse: true } });
  expectError(t, refused, 402, 'error.teamLimits.multiUseInvites');
  t.equal(await inviteRows(), before);
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { multiUseInvites: true });
  const multi = (await server.media('POST', base, inviter.key, { body: { groupId: group.id, isMultiUse: true } })).body;
  t.equal((await accept(multi.id, { userId: await aUser() })).status, 201);
  t.equal((await accept(multi.id, { userId: await aUser() })).status, 201);
  const members = await tableSnapshot(server, 'select count(*)::int as n from team_member where team_id = $1 and left_team_at is null', [team.teamId]);
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxMembers: JSON.parse(members)[0].n });
  const over = await accept(multi.id, { userId: await aUser() });
  expectError(t, over, 402, 'error.teamLimits.maxMembers');
  t.equal(await tableSnapshot(server, 'select count(*)::int as n from team_member where team_id = $1 and left_team_at is null', [team.teamId]), members, 'no member added');
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxMembers: null });
});

t.test('join requirements and expiry refuse; a user cannot join twice', async (t) => {
  const invite = (await server.media('POST', base, inviter.key, { body: { groupId: group.id, isMultiUse: true } })).body;
  await server.media('PATCH', `/v1/teams/${team.teamId}`, team.key, { body: { requirements: { discord: true } } });
  const refused = await accept(invite.id, { userId: await aUser() });
  expectError(t, refused, 403, 'error.forbidden');
  t.equal(refused.body.value, 'discord');
  await server.media('PATCH', `/v1/teams/${team.teamId}`, team.key, { body: { requirements: { discord: false } } });
  const userId = await aUser();
  t.equal((await accept(invite.id, { userId })).status, 201);
  expectError(t, await accept(invite.id, { userId }), 409, 'error.conflict');
  const soon = (await server.media('POST', base, inviter.key, { body: { groupId: group.id, expireDate: new Date(Date.now() + 1500).toISOString() } })).body;
  await new Promise((resolve) => setTimeout(resolve, 1600));
  expectError(t, await accept(soon.id, { userId: await aUser() }), 404, 'error.notFound');
});

t.test('validation: 400 and nothing stored; foreign group 404; group beyond the caller 403', async (t) => {
  const before = await inviteRows();
  for (const body of [{ groupId: 'x' }, { groupId: group.id, isMultiUse: 'yes' }, { groupId: group.id, expireDate: 'tomorrow' },
    { groupId: group.id, expireDate: new Date(Date.now() - 1000).toISOString() }, { groupId: group.id, expireDate: new Date(Date.now() + 400 * 86_400_000).toISOString() },
    { groupId: group.id, extra: 1 }]) {
    expectError(t, await server.media('POST', base, inviter.key, { body }), 400, 'error.badRequest');
  }
  expectError(t, await server.media('POST', base, inviter.key, { body: {} }), 400, 'error.missingArgument.groupId');
  expectError(t, await server.media('POST', base, inviter.key, { body: { groupId: '00000000-0000-4000-8000-000000000000' } }), 404, 'error.notFound');
  expectError(t, await server.media('POST', base, inviter.key, { body: { groupId: strong.id } }), 403, 'error.forbidden');
  t.equal(await inviteRows(), before);
  const invite = JSON.parse(before)[0];
  for (const body of [{}, { userId: 'x' }, { userId: await aUser(), name: 'a b' }]) {
    t.equal((await accept(invite.id, body)).status, 400);
  }
  expectError(t, await server.request('POST', `/v1/admin/invites/${invite.id}/accept`, { body: { userId: await aUser() } }), 401, 'error.unauthorized');
});

t.test('delete one (INVITE_DELETED) and clear all (INVITES_CLEAR); permissions', async (t) => {
  const nobody = await memberWithKey(server, team.teamId, 'nobody', ['team.media.view']);
  const before = await inviteRows();
  for (const [method, path] of [['GET', base], ['POST', base], ['DELETE', base], ['DELETE', `${base}/${JSON.parse(before)[0].id}`]] as const) {
    expectError(t, await server.media(method, path, nobody.key, method === 'GET' ? {} : { body: { groupId: group.id } }), 403, 'error.forbidden');
  }
  t.equal(await inviteRows(), before);
  const one = (await server.media('POST', base, inviter.key, { body: { groupId: group.id } })).body;
  t.equal((await server.media('DELETE', `${base}/${one.id}`, inviter.key)).status, 204);
  t.match(await lastLog(), { action: 'INVITE_DELETED', target_identifier: one.id });
  expectError(t, await server.media('DELETE', `${base}/${one.id}`, inviter.key), 404, 'error.notFound');
  const cleared = await server.media('DELETE', base, inviter.key);
  t.equal(cleared.status, 200);
  t.equal(cleared.body.deleted, JSON.parse(before).length);
  t.match(await lastLog(), { action: 'INVITES_CLEAR', data: { deleted: JSON.parse(before).length } });
  t.same((await server.media('GET', base, inviter.key)).body, []);
});

t.test('a member who left or was kicked rejoins through a new invite: the same row, active again, old keys gone', async (t) => {
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { multiUseInvites: true, maxMembers: null });
  const invite = (await server.media('POST', base, inviter.key, { body: { groupId: group.id, isMultiUse: true } })).body;
  const userId = await aUser();
  const joined = (await accept(invite.id, { userId, name: 'returner' })).body;
  const oldKey = (await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, { teamMemberId: joined.id })).body;
  await server.media('PATCH', `/v1/teams/${team.teamId}/members/${joined.id}`, team.key, { body: { permissions: ['team.media.view'], sort: 4 } });
  t.equal((await server.media('POST', `/v1/teams/${team.teamId}/leave`, oldKey.key)).status, 204);
  expectError(t, await server.media('GET', `/v1/teams/${team.teamId}`, oldKey.key), 401, 'error.unauthorized');

  // Its name is free while it is away.
  const namesake = (await accept(invite.id, { userId: await aUser(), name: 'returner' })).body;
  t.equal(namesake.name, 'returner');
  expectError(t, await accept(invite.id, { userId }), 409, 'error.conflict');
  t.match(await tableSnapshot(server, 'select left_team_at is not null as away from team_member where id = $1', [joined.id]), /"away":true/, 'still away after the 409');

  const back = await accept(invite.id, { userId, name: 'returner2' });
  t.equal(back.status, 201);
  t.match(back.body, { id: joined.id, userId, name: 'returner2', leftTeamAt: null, archived: false, permissions: [], sort: 0, mainGroupId: group.id });
  t.ok(Date.parse(back.body.joinedTeamAt) > Date.parse(joined.joinedTeamAt), 'joined again now');
  const logs = await teamLogRows(server, team.teamId);
  t.ok(logs.some((row) => row.action === 'MEMBER_JOINED' && row.target_team_member_id === joined.id && row.data?.rejoined === true));
  t.ok(logs.some((row) => row.action === 'API_KEY_DELETED' && row.target_identifier === oldKey.id && row.data?.reason === 'memberRejoined'));
  // A key from before it left never works again.
  expectError(t, await server.media('GET', `/v1/teams/${team.teamId}`, oldKey.key), 401, 'error.unauthorized');
  const info = (await server.media('GET', `/v1/teams/${team.teamId}/members/${joined.id}`, team.key)).body;
  t.same(info.groups.map((g: any) => g.id), [group.id]);
  const listed = (await server.media('GET', `/v1/teams/${team.teamId}/members?search=returner2`, team.key)).body;
  t.equal(listed.count, 1);

  // Kicked, then back, with its name.
  t.equal((await server.media('DELETE', `/v1/teams/${team.teamId}/members/${joined.id}`, team.key)).status, 204);
  const again = await accept(invite.id, { userId });
  t.equal(again.status, 201);
  t.match(again.body, { id: joined.id, name: 'returner2', leftTeamAt: null });
  t.not(namesake.id, joined.id);
});

t.test('maxMembers counts current members only; a rejoin over the limit is 402 and changes nothing', async (t) => {
  const invite = (await server.media('POST', base, inviter.key, { body: { groupId: group.id, isMultiUse: true } })).body;
  const userId = await aUser();
  const member = (await accept(invite.id, { userId })).body;
  t.equal((await server.media('DELETE', `/v1/teams/${team.teamId}/members/${member.id}`, team.key)).status, 204);
  const current = JSON.parse(await tableSnapshot(server, 'select count(*)::int as n from team_member where team_id = $1 and left_team_at is null', [team.teamId]))[0].n;
  const all = JSON.parse(await tableSnapshot(server, 'select count(*)::int as n from team_member where team_id = $1', [team.teamId]))[0].n;
  t.ok(all > current, 'some members left');
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxMembers: current });
  const rows = await tableSnapshot(server, 'select * from team_member where team_id = $1 order by id', [team.teamId]);
  expectError(t, await accept(invite.id, { userId }), 402, 'error.teamLimits.maxMembers');
  t.equal(await tableSnapshot(server, 'select * from team_member where team_id = $1 order by id', [team.teamId]), rows, 'nothing changed');
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxMembers: current + 1 });
  t.equal((await accept(invite.id, { userId })).status, 201, 'one place: the rejoin fits');
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxMembers: null });
});
