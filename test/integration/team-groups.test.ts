import t from 'tap';
import { expectError, startTestServer } from '../helpers/server.ts';
import { memberWithKey, tableSnapshot, teamLogRows } from '../helpers/team-admin.ts';

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
const team = await server.createTeam('Groups');
const base = `/v1/teams/${team.teamId}`;
const groupsManager = await memberWithKey(server, team.teamId, 'groupsAdmin', ['team.groups.manage', 'team.members.view', 'team.media.view', 'team.media.edit']);
const target = await memberWithKey(server, team.teamId, 'target', []);
const groupRows = () => tableSnapshot(server, 'select * from team_group where team_id = $1 order by id', [team.teamId]);
const membershipRows = () => tableSnapshot(server, 'select member_id, group_id from team_member_group mg join team_member m on m.id = mg.member_id where m.team_id = $1 order by 1, 2', [team.teamId]);
const lastLog = async () => (await teamLogRows(server, team.teamId)).at(-1)!;
const folders = `/v1/cdn/media/${team.teamId}/folders`;

let editors: any;

t.test('create (GROUP_CREATED), list, validation', async (t) => {
  const created = await server.media('POST', `${base}/groups`, groupsManager.key, { body: { name: 'Editors', permissions: ['team.media.edit'], color: '#00ff00', sort: 3 } });
  t.equal(created.status, 201);
  editors = created.body;
  t.match(editors, { teamId: team.teamId, name: 'Editors', permissions: ['team.media.edit'], color: '#00ff00', sort: 3 });
  t.match(await lastLog(), { action: 'GROUP_CREATED', team_member_id: groupsManager.memberId, target_identifier: editors.id, data: { name: 'Editors' } });
  const list = await server.media('GET', `${base}/groups`, groupsManager.key);
  t.same(list.body.map((g: any) => g.id), [editors.id]);

  const before = await groupRows();
  for (const body of [{ name: 'E', permissions: [] }, { name: 'x'.repeat(25), permissions: [] }, { name: 'Okay', permissions: [], color: 'red' },
    { name: 'Okay', permissions: [], color: '#12345' }, { name: 'Okay', permissions: ['Bad Perm'] }, { name: 'Okay', permissions: [], sort: -1 }, { name: 'Okay', permissions: [], extra: 1 }]) {
    expectError(t, await server.media('POST', `${base}/groups`, groupsManager.key, { body }), 400, 'error.badRequest');
  }
  expectError(t, await server.media('POST', `${base}/groups`, groupsManager.key, { body: { name: 'Okay' } }), 400, 'error.missingArgument.permissions');
  const beyond = await server.media('POST', `${base}/groups`, groupsManager.key, { body: { name: 'Admins', permissions: ['team.settings.manage'] } });
  expectError(t, beyond, 403, 'error.forbidden');
  t.equal(await groupRows(), before, 'nothing created');
});

t.test('membership: added and removed at once for the member\'s keys; logged; the caller must hold the group\'s permissions', async (t) => {
  expectError(t, await server.media('POST', folders, target.key, { body: { name: 'no' } }), 403, 'error.forbidden');
  t.equal((await server.media('PUT', `${base}/groups/${editors.id}/members/${target.memberId}`, groupsManager.key)).status, 204);
  t.match(await lastLog(), { action: 'MEMBER_GROUP_ADDED', team_member_id: groupsManager.memberId, target_team_member_id: target.memberId, target_identifier: editors.id });
  t.equal((await server.media('POST', folders, target.key, { body: { name: 'yes' } })).status, 201, 'the group\'s permission reaches the key at once');
  expectError(t, await server.media('PUT', `${base}/groups/${editors.id}/members/${target.memberId}`, groupsManager.key), 409, 'error.conflict');

  t.equal((await server.media('DELETE', `${base}/groups/${editors.id}/members/${target.memberId}`, groupsManager.key)).status, 204);
  t.match(await lastLog(), { action: 'MEMBER_GROUP_REMOVED', target_team_member_id: target.memberId, target_identifier: editors.id });
  expectError(t, await server.media('POST', folders, target.key, { body: { name: 'no-again' } }), 403, 'error.forbidden');
  expectError(t, await server.media('DELETE', `${base}/groups/${editors.id}/members/${target.memberId}`, groupsManager.key), 404, 'error.notFound');

  const admins = (await server.media('POST', `${base}/groups`, team.key, { body: { name: 'Admins', permissions: ['team.settings.manage'] } })).body;
  const before = await membershipRows();
  expectError(t, await server.media('PUT', `${base}/groups/${admins.id}/members/${groupsManager.memberId}`, groupsManager.key), 403, 'error.forbidden');
  expectError(t, await server.media('PUT', `${base}/groups/${admins.id}/members/00000000-0000-4000-8000-000000000000`, team.key), 404, 'error.notFound');
  expectError(t, await server.media('PUT', `${base}/groups/00000000-0000-4000-8000-000000000000/members/${target.memberId}`, team.key), 404, 'error.notFound');
  t.equal(await membershipRows(), before);
});

t.test('update (GROUP_UPDATED): a permission change reaches members\' keys at once', async (t) => {
  await server.media('PUT', `${base}/groups/${editors.id}/members/${target.memberId}`, groupsManager.key);
  const renamed = await server.media('PATCH', `${base}/groups/${editors.id}`, groupsManager.key, { body: { name: 'Viewers', permissions: ['team.media.view'], color: '#abc' } });
  t.equal(renamed.status, 200);
  t.match(renamed.body, { name: 'Viewers', permissions: ['team.media.view'], color: '#abc' });
  t.match(await lastLog(), { action: 'GROUP_UPDATED', data: { name: 'Viewers', color: '#abc', permissions: { added: ['team.media.view'], removed: ['team.media.edit'] } } });
  expectError(t, await server.media('POST', folders, target.key, { body: { name: 'gone' } }), 403, 'error.forbidden');
  t.equal((await server.media('GET', folders, target.key)).status, 200);

  const before = await groupRows();
  for (const body of [{ name: 'x' }, { color: 'blue' }, { permissions: 'x' }, { sort: 'first' }, { id: editors.id }]) {
    expectError(t, await server.media('PATCH', `${base}/groups/${editors.id}`, groupsManager.key, { body }), 400, 'error.badRequest');
  }
  expectError(t, await server.media('PATCH', `${base}/groups/${editors.id}`, groupsManager.key, { body: { permissions: ['team.logs.view'] } }), 403, 'error.forbidden');
  expectError(t, await server.media('PATCH', `${base}/groups/00000000-0000-4000-8000-000000000000`, groupsManager.key, { body: { sort: 1 } }), 404, 'error.notFound');
  t.equal(await groupRows(), before);
});

t.test('reorder (GROUPS_UPDATED)', async (t) => {
  const all = (await server.media('GET', `${base}/groups`, groupsManager.key)).body.map((g: any) => g.id);
  const reversed = [...all].reverse();
  const response = await server.media('PUT', `${base}/groups/order`, groupsManager.key, { body: { groupIds: reversed } });
  t.equal(response.status, 200);
  t.same(response.body.map((g: any) => g.id), reversed);
  t.same(response.body.map((g: any) => g.sort), reversed.map((_: unknown, index: number) => index));
  t.match(await lastLog(), { action: 'GROUPS_UPDATED', data: { order: reversed } });
  const before = await groupRows();
  expectError(t, await server.media('PUT', `${base}/groups/order`, groupsManager.key, { body: { groupIds: [] } }), 400, 'error.badRequest');
  expectError(t, await server.media('PUT', `${base}/groups/order`, groupsManager.key, { body: { groupIds: ['x'] } }), 400, 'error.badRequest');
  expectError(t, await server.media('PUT', `${base}/groups/order`, groupsManager.key, { body: { groupIds: [all[0], '00000000-0000-4000-8000-000000000000'] } }), 404, 'error.notFound');
  t.equal(await groupRows(), before);
});

t.test('delete (GROUP_DELETED): members lose its permissions at once', async (t) => {
  t.equal((await server.media('GET', folders, target.key)).status, 200);
  t.equal((await server.media('DELETE', `${base}/groups/${editors.id}`, groupsManager.key)).status, 204);
  t.match(await lastLog(), { action: 'GROUP_DELETED', target_identifier: editors.id, data: { name: 'Viewers' } });
  expectError(t, await server.media('GET', folders, target.key), 403, 'error.forbidden');
  expectError(t, await server.media('DELETE', `${base}/groups/${editors.id}`, groupsManager.key), 404, 'error.notFound');
});

t.test('maxGroups: 402 error.teamLimits.maxGroups and nothing created', async (t) => {
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxGroups: 2 });
  const count = JSON.parse(await groupRows()).length;
  for (let i = count; i < 2; i++) t.equal((await server.media('POST', `${base}/groups`, team.key, { body: { name: `Fill${i}`, permissions: [] } })).status, 201);
  const before = await groupRows();
  const over = await server.media('POST', `${base}/groups`, team.key, { body: { name: 'TooMany', permissions: [] } });
  expectError(t, over, 402, 'error.teamLimits.maxGroups');
  t.equal(over.body.value, 2);
  t.equal(await groupRows(), before);
});

t.test('permissions: team.members.view to list, team.groups.manage to change; an upload key reaches none', async (t) => {
  const nobody = await memberWithKey(server, team.teamId, 'nobody', ['team.members.view']);
  const group = JSON.parse(await groupRows())[0];
  expectError(t, await server.media('GET', `${base}/groups`, target.key), 403, 'error.forbidden');
  const before = await groupRows();
  for (const [method, path] of [['POST', `${base}/groups`], ['PUT', `${base}/groups/order`], ['PATCH', `${base}/groups/${group.id}`], ['DELETE', `${base}/groups/${group.id}`],
    ['PUT', `${base}/groups/${group.id}/members/${target.memberId}`], ['DELETE', `${base}/groups/${group.id}/members/${target.memberId}`]] as const) {
    expectError(t, await server.media(method, path, nobody.key, { body: { name: 'Nope', permissions: [], groupIds: [group.id] } }), 403, 'error.forbidden');
  }
  const uploader = await memberWithKey(server, team.teamId, 'uploader', ['team.groups.manage', 'team.members.view', 'team.media.upload'], { scopes: ['media:upload'] });
  expectError(t, await server.media('GET', `${base}/groups`, uploader.key), 403, 'error.forbidden');
  expectError(t, await server.media('POST', `${base}/groups`, uploader.key, { body: { name: 'Nope', permissions: [] } }), 403, 'error.forbidden');
  t.equal(await groupRows(), before);
});

t.test('PUT /members/{memberId}/groups replaces the set (MEMBER_GROUPS_CHANGED), at once for the keys', async (t) => {
  const member = await memberWithKey(server, team.teamId, 'setMember', []);
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxGroups: null });
  const viewers = (await server.media('POST', `${base}/groups`, team.key, { body: { name: 'SetViewers', permissions: ['team.media.view'] } })).body;
  const plainGroup = (await server.media('POST', `${base}/groups`, team.key, { body: { name: 'SetPlain', permissions: [] } })).body;
  const path = `${base}/members/${member.memberId}/groups`;
  expectError(t, await server.media('GET', folders, member.key), 403, 'error.forbidden');
  const set = await server.media('PUT', path, groupsManager.key, { body: { groupIds: [viewers.id, plainGroup.id] } });
  t.equal(set.status, 200);
  t.same(set.body.map((g: any) => g.id).sort(), [viewers.id, plainGroup.id].sort());
  t.match(await lastLog(), { action: 'MEMBER_GROUPS_CHANGED', team_member_id: groupsManager.memberId, target_team_member_id: member.memberId });
  t.same((await lastLog()).data.added.sort(), [viewers.id, plainGroup.id].sort());
  t.equal((await server.media('GET', folders, member.key)).status, 200, 'the group permission reaches the key at once');
  const logCount = (await teamLogRows(server, team.teamId)).length;
  t.equal((await server.media('PUT', path, groupsManager.key, { body: { groupIds: [plainGroup.id, viewers.id] } })).status, 200);
  t.equal((await teamLogRows(server, team.teamId)).length, logCount, 'no change, no log');
  await server.media('PUT', path, groupsManager.key, { body: { groupIds: [plainGroup.id] } });
  t.same((await lastLog()).data, { added: [], removed: [viewers.id] });
  expectError(t, await server.media('GET', folders, member.key), 403, 'error.forbidden');

  const before = await membershipRows();
  const admins = JSON.parse(await groupRows()).find((g: any) => g.name === 'Admins');
  expectError(t, await server.media('PUT', path, groupsManager.key, { body: { groupIds: [plainGroup.id, admins.id] } }), 403, 'error.forbidden');
  expectError(t, await server.media('PUT', path, groupsManager.key, { body: { groupIds: ['x'] } }), 400, 'error.badRequest');
  expectError(t, await server.media('PUT', path, groupsManager.key, { body: {} }), 400, 'error.missingArgument.groupIds');
  expectError(t, await server.media('PUT', path, groupsManager.key, { body: { groupIds: ['00000000-0000-4000-8000-000000000000'] } }), 404, 'error.notFound');
  expectError(t, await server.media('PUT', `${base}/members/00000000-0000-4000-8000-000000000000/groups`, groupsManager.key, { body: { groupIds: [] } }), 404, 'error.notFound');
  expectError(t, await server.media('PUT', path, target.key, { body: { groupIds: [] } }), 403, 'error.forbidden');
  t.equal(await membershipRows(), before);
});
