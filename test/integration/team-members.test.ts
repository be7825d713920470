import t from 'tap';
import { expectError, startTestServer } from '../helpers/server.ts';
import { memberWithKey, tableSnapshot, teamLogRows } from '../helpers/team-admin.ts';

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
const team = await server.createTeam('Members');
const base = `/v1/teams/${team.teamId}`;
const group = (await server.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Mods', permissions: ['team.media.view'], color: '#ff0000', sort: 2 })).body;
const manager = await memberWithKey(server, team.teamId, 'manager', ['team.members.view', 'team.members.manage', 'team.media.view', 'team.media.edit']);
const viewer = await memberWithKey(server, team.teamId, 'viewer', ['team.members.view'], { groupIds: [group.id] });
const memberRow = (id: string) => tableSnapshot(server, 'select * from team_member where id = $1', [id]);
const lastLog = async () => (await teamLogRows(server, team.teamId)).at(-1)!;

t.test('lists current members as {data, count} of TeamMemberInfo2, paged and searchable', async (t) => {
  const list = await server.media('GET', `${base}/members`, viewer.key);
  t.equal(list.status, 200);
  t.equal(list.body.count, 3);
  t.same(list.body.data.map((member: any) => member.name).sort(), ['Owner', 'manager', 'viewer']);
  const found = await server.media('GET', `${base}/members?search=VIEW`, viewer.key);
  t.same(found.body.data.map((member: any) => member.name), ['viewer']);
  t.equal(found.body.count, 1);
  t.equal((await server.media('GET', `${base}/members?search=%25`, viewer.key)).body.count, 0, 'LIKE wildcards are literal');
  const page = await server.media('GET', `${base}/members`, viewer.key, { headers: { pageSize: '2', pageNumber: '2' } });
  t.equal(page.body.data.length, 1);
  t.equal(page.body.count, 3);
  expectError(t, await server.media('GET', `${base}/members?search=${'x'.repeat(256)}`, viewer.key), 400, 'error.badRequest');
  expectError(t, await server.media('GET', `${base}/members`, viewer.key, { headers: { pageSize: '0' } }), 400, 'error.badRequest');
});

t.test('reads one member with groups, main group and user', async (t) => {
  const got = await server.media('GET', `${base}/members/${viewer.memberId}`, viewer.key);
  t.equal(got.status, 200);
  t.match(got.body, { id: viewer.memberId, name: 'viewer', mainGroup: null, user: { username: String, accounts: [] } });
  t.same(got.body.groups.map((g: any) => g.id), [group.id]);
  expectError(t, await server.media('GET', `${base}/members/00000000-0000-4000-8000-000000000000`, viewer.key), 404, 'error.notFound');
  expectError(t, await server.media('GET', `${base}/members/not-a-uuid`, viewer.key), 404, 'error.notFound');
});

t.test('updates name, main group, sort and note (MEMBER_UPDATED)', async (t) => {
  const response = await server.media('PATCH', `${base}/members/${viewer.memberId}`, manager.key, {
    body: { name: 'viewer_2', mainGroupId: group.id, sort: 5, personalNote: 'hello' },
  });
  t.equal(response.status, 200);
  t.match(response.body, { name: 'viewer_2', mainGroupId: group.id, mainGroup: { id: group.id, name: 'Mods' }, sort: 5, personalNote: 'hello' });
  t.match(await lastLog(), { action: 'MEMBER_UPDATED', team_member_id: manager.memberId, target_team_member_id: viewer.memberId, data: { name: 'viewer_2', sort: 5 } });
  const list = await server.media('GET', `${base}/members?search=viewer_2`, viewer.key);
  t.same(list.body.data[0].mainGroup, { id: group.id, name: 'Mods', color: '#ff0000', sort: 2 });
  const cleared = await server.media('PATCH', `${base}/members/${viewer.memberId}`, manager.key, { body: { mainGroupId: null } });
  t.equal(cleared.body.mainGroup, null);
});

t.test('update validation: 400 and nothing changed; taken name 409; foreign main group 404', async (t) => {
  const before = await memberRow(viewer.memberId);
  for (const body of [{ name: 'ab' }, { name: 'x'.repeat(21) }, { name: 'bad name' }, { sort: -1 }, { sort: 1.5 }, { permissions: ['NOT A PERMISSION'] },
    { permissions: 'team.media.view' }, { mainGroupId: 'nope' }, { personalNote: 7 }, { isTeamOwner: true }]) {
    expectError(t, await server.media('PATCH', `${base}/members/${viewer.memberId}`, manager.key, { body }), 400, 'error.badRequest');
  }
  expectError(t, await server.media('PATCH', `${base}/members/${viewer.memberId}`, manager.key, { body: { name: 'manager' } }), 409, 'error.conflict');
  const otherGroup = (await server.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'NotHis', permissions: [] })).body;
  expectError(t, await server.media('PATCH', `${base}/members/${viewer.memberId}`, manager.key, { body: { mainGroupId: otherGroup.id } }), 404, 'error.notFound');
  t.equal(await memberRow(viewer.memberId), before);
});

t.test('permissions: reach the member\'s keys at once; never beyond the caller\'s own (MEMBER_PERMISSIONS_UPDATED)', async (t) => {
  const folders = `/v1/cdn/media/${team.teamId}/folders`;
  expectError(t, await server.media('POST', folders, viewer.key, { body: { name: 'before' } }), 403, 'error.forbidden');
  const granted = await server.media('PATCH', `${base}/members/${viewer.memberId}`, manager.key, { body: { permissions: ['team.members.view', 'team.media.edit'] } });
  t.equal(granted.status, 200);
  t.match(await lastLog(), { action: 'MEMBER_PERMISSIONS_UPDATED', team_member_id: manager.memberId, target_team_member_id: viewer.memberId, data: { added: ['team.media.edit'], removed: [] } });
  t.equal((await server.media('POST', folders, viewer.key, { body: { name: 'after' } })).status, 201, 'the cached key sees the new permission');

  const before = await memberRow(viewer.memberId);
  const beyond = await server.media('PATCH', `${base}/members/${viewer.memberId}`, manager.key, { body: { permissions: ['team.members.view', 'team.media.edit', 'team.logs.view'] } });
  expectError(t, beyond, 403, 'error.forbidden');
  t.equal(beyond.body.value, 'team.logs.view');
  t.equal(await memberRow(viewer.memberId), before, 'nothing changed');
  const owner = await server.media('PATCH', `${base}/members/${team.ownerId}`, team.key, { body: { permissions: [] } });
  expectError(t, owner, 403, 'error.forbidden');

  await server.media('PATCH', `${base}/members/${viewer.memberId}`, manager.key, { body: { permissions: ['team.members.view'] } });
  expectError(t, await server.media('POST', folders, viewer.key, { body: { name: 'again' } }), 403, 'error.forbidden');
});

t.test('changes need team.members.manage, reads team.members.view', async (t) => {
  const nobody = await memberWithKey(server, team.teamId, 'nobody', []);
  expectError(t, await server.media('GET', `${base}/members`, nobody.key), 403, 'error.forbidden');
  expectError(t, await server.media('GET', `${base}/members/${viewer.memberId}`, nobody.key), 403, 'error.forbidden');
  const before = await memberRow(viewer.memberId);
  expectError(t, await server.media('PATCH', `${base}/members/${viewer.memberId}`, viewer.key, { body: { sort: 9 } }), 403, 'error.forbidden');
  expectError(t, await server.media('DELETE', `${base}/members/${viewer.memberId}`, viewer.key), 403, 'error.forbidden');
  t.equal(await memberRow(viewer.memberId), before);
  const uploader = await memberWithKey(server, team.teamId, 'uploader', ['team.members.view', 'team.members.manage', 'team.media.upload'], { scopes: ['media:upload'] });
  for (const [method, path] of [['GET', `${base}/members`], ['GET', `${base}/members/${viewer.memberId}`], ['PATCH', `${base}/members/${viewer.memberId}`],
    ['DELETE', `${base}/members/${viewer.memberId}`], ['POST', `${base}/leave`], ['GET', `${base}/dashboard`]] as const) {
    expectError(t, await server.media(method, path, uploader.key, method === 'GET' ? {} : { body: {} }), 403, 'error.forbidden');
  }
});

t.test('dashboard: the key\'s member and the member count; the owner for an unlinked key', async (t) => {
  const mine = await server.media('GET', `${base}/dashboard`, manager.key);
  t.equal(mine.status, 200);
  t.equal(mine.body.member.id, manager.memberId);
  t.same(mine.body.meetings, []);
  const count = (await server.media('GET', `${base}/members`, manager.key)).body.count;
  t.equal(mine.body.memberCount, count);
  t.equal((await server.media('GET', `${base}/dashboard`, team.key)).body.member.id, team.ownerId);
});

t.test('kick: MEMBER_KICKED, row archived with leftTeamAt, keys stop at once; the owner cannot be kicked', async (t) => {
  const victim = await memberWithKey(server, team.teamId, 'victim', ['team.media.view']);
  t.equal((await server.media('GET', `/v1/cdn/media/${team.teamId}`, victim.key)).status, 200, 'the key works (and is cached)');
  const kicked = await server.media('DELETE', `${base}/members/${victim.memberId}`, manager.key);
  t.equal(kicked.status, 204);
  t.match(await lastLog(), { action: 'MEMBER_KICKED', team_member_id: manager.memberId, target_team_member_id: victim.memberId });
  expectError(t, await server.media('GET', `/v1/cdn/media/${team.teamId}`, victim.key), 401, 'error.unauthorized');
  const row = await server.media('GET', `${base}/members/${victim.memberId}`, manager.key);
  t.match(row.body, { archived: true, leftTeamAt: String });
  t.notOk((await server.media('GET', `${base}/members`, manager.key)).body.data.some((m: any) => m.id === victim.memberId), 'not listed');
  expectError(t, await server.media('DELETE', `${base}/members/${victim.memberId}`, manager.key), 404, 'error.notFound');
  expectError(t, await server.media('PATCH', `${base}/members/${victim.memberId}`, manager.key, { body: { sort: 1 } }), 404, 'error.notFound');
  const ownerBefore = await memberRow(team.ownerId);
  expectError(t, await server.media('DELETE', `${base}/members/${team.ownerId}`, manager.key), 403, 'error.forbidden');
  t.equal(await memberRow(team.ownerId), ownerBefore);
});

t.test('leave: MEMBER_LEFT; the owner (or a key acting as the owner) cannot leave', async (t) => {
  const leaver = await memberWithKey(server, team.teamId, 'leaver', []);
  t.equal((await server.media('POST', `${base}/leave`, leaver.key)).status, 204);
  t.match(await lastLog(), { action: 'MEMBER_LEFT', team_member_id: leaver.memberId, target_team_member_id: leaver.memberId });
  expectError(t, await server.media('GET', `${base}/dashboard`, leaver.key), 401, 'error.unauthorized');
  expectError(t, await server.media('POST', `${base}/leave`, team.key), 403, 'error.forbidden');
  const ownerKey = (await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, { teamMemberId: team.ownerId })).body.key;
  expectError(t, await server.media('POST', `${base}/leave`, ownerKey), 403, 'error.forbidden');
  t.equal((await server.media('GET', `${base}/members/${team.ownerId}`, ownerKey)).body.leftTeamAt, null);
});
