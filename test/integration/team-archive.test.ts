import t from 'tap';
import { expectError, startTestServer } from '../helpers/server.ts';
import { memberWithKey, tableSnapshot, teamLogRows } from '../helpers/team-admin.ts';
import { MEDIA_ROW_COLUMNS, pngLike, uploadJson, uploadMultipart } from '../helpers/uploads.ts';

// An archived team reads everything, and changes nothing until it is unarchived (docs/team-admin.md):
// every change is 403 error.team.archived, but for unarchive, leave and deleting a key.
const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000, AUTOMATION_ALLOW_PRIVATE_TARGETS: true } });
const team = await server.createTeam('Archived');
const T = `/v1/teams/${team.teamId}`;
const M = `/v1/cdn/media/${team.teamId}`;
const group = (await server.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Crew', permissions: [] })).body;
const member = await memberWithKey(server, team.teamId, 'member', ['team.media.view']);
const spare = await memberWithKey(server, team.teamId, 'spare', []);
const file = (await uploadMultipart(server, team.teamId, team.key, { content: pngLike(500), fileName: 'kept.png' })).body;
const folder = (await server.media('POST', `${M}/folders`, team.key, { body: { name: 'kept' } })).body;
const invite = (await server.media('POST', `${T}/invites`, team.key, { body: { groupId: group.id } })).body;
const userId = (await server.admin('POST', `/v1/admin/teams/${(await server.createTeam('Elsewhere')).teamId}/members`, { name: 'joiner', permissions: [] })).body.userId;

// Everything the team owns, to show a refused change left it as it was.
const state = () => Promise.all([
  tableSnapshot(server, 'select * from team where id = $1', [team.teamId]),
  tableSnapshot(server, 'select * from team_member where team_id = $1 order by id', [team.teamId]),
  tableSnapshot(server, 'select * from team_group where team_id = $1 order by id', [team.teamId]),
  tableSnapshot(server, 'select id, prefix, description from api_key where team_id = $1 order by id', [team.teamId]),
  tableSnapshot(server, `select ${MEDIA_ROW_COLUMNS} from media_file where team_id = $1 order by id`, [team.teamId]),
  tableSnapshot(server, 'select * from media_folder where team_id = $1 order by id', [team.teamId]),
  tableSnapshot(server, 'select * from team_invite where team_id = $1 order by id', [team.teamId]),
  tableSnapshot(server, 'select * from automation where team_id = $1 order by id', [team.teamId]),
  tableSnapshot(server, 'select * from team_module where team_id = $1 order by id', [team.teamId]),
]).then((parts) => parts.join('\n'));

t.test('archive: TEAM_UPDATED, and the keys know at once', async (t) => {
  const archived = await server.media('POST', `${T}/archive`, team.key);
  t.equal(archived.status, 200);
  t.equal(archived.body.archived, true);
  t.match((await teamLogRows(server, team.teamId)).at(-1), { action: 'TEAM_UPDATED', data: { archived: true } });
  t.equal((await server.media('POST', `${T}/archive`, team.key)).status, 200, 'archiving again is a no-op, not an error');
});

t.test('an archived team still reads everything', async (t) => {
  for (const path of [T, `${T}/minimal`, `${T}/join-info`, `${T}/members`, `${T}/groups`, `${T}/logs`, `${T}/plan`, `${T}/subscriptions`, `${T}/api-keys`,
    `${T}/invites`, `${T}/modules`, `${T}/dashboard`, `${T}/me`, `${T}/automations`, M, `${M}/folders`, `${M}/${file.id}`]) {
    t.equal((await server.media('GET', path, team.key)).status, 200, path);
  }
  t.equal((await server.media('GET', M, member.key)).status, 200, 'a member key reads too');
});

t.test('every change is 403 error.team.archived and changes nothing', async (t) => {
  const before = await state();
  const cases: [string, string, unknown][] = [
    ['PATCH', T, { name: 'Renamed' }],
    ['POST', `${T}/groups`, { name: 'New', permissions: [] }],
    ['PATCH', `${T}/groups/${group.id}`, { name: 'Renamed' }],
    ['DELETE', `${T}/groups/${group.id}`, undefined],
    ['PUT', `${T}/groups/${group.id}/members/${member.memberId}`, undefined],
    ['PATCH', `${T}/members/${member.memberId}`, { sort: 9 }],
    ['DELETE', `${T}/members/${member.memberId}`, undefined],
    ['POST', `${T}/members/${member.memberId}/notes`, { note: 'hello' }],
    ['POST', `${T}/invites`, { groupId: group.id }],
    ['DELETE', `${T}/invites/${invite.id}`, undefined],
    ['DELETE', `${T}/invites`, undefined],
    ['POST', `${T}/api-keys`, { description: 'new' }],
    ['POST', `${T}/api-keys/${spare.keyId}/reroll`, undefined],
    ['PATCH', `${T}/modules`, { updates: [{ moduleId: 'moduleVoice', active: true }] }],
    ['POST', `${T}/automations`, { name: 'hook', url: 'http://127.0.0.1:9/hook' }],
    ['POST', `${M}/folders`, { name: 'new' }],
    ['PATCH', `${M}/folders/${folder.id}`, { name: 'renamed' }],
    ['PATCH', `${M}/update/${file.id}`, { fileName: 'renamed.png' }],
    ['DELETE', `${M}/delete/${file.id}`, undefined],
    ['POST', `${M}/bulk`, { action: 'delete', ids: [file.id] }],
  ];
  for (const [method, path, body] of cases) {
    const response = await server.media(method, path, team.key, body === undefined ? {} : { body });
    expectError(t, response, 403, 'error.team.archived');
  }
  expectError(t, await uploadMultipart(server, team.teamId, team.key, { content: pngLike(300), fileName: 'new.png' }), 403, 'error.team.archived');
  expectError(t, await uploadJson(server, team.teamId, team.key, { file: pngLike(300).toString('base64'), fileName: 'new.png' }), 403, 'error.team.archived');
  expectError(t, await server.admin('POST', `/v1/admin/invites/${invite.id}/accept`, { userId }), 403, 'error.team.archived');
  t.equal(await state(), before, 'nothing changed');
  // The permission check comes first: a key without it learns nothing about the team's state.
  expectError(t, await server.media('PATCH', T, member.key, { body: { name: 'x' } }), 403, 'error.forbidden');
});

t.test('what an archived team may still change: delete a key, leave, unarchive', async (t) => {
  t.equal((await server.media('DELETE', `${T}/api-keys/${spare.keyId}`, team.key)).status, 204);
  expectError(t, await server.media('GET', T, spare.key), 401, 'error.unauthorized');
  t.equal((await server.media('POST', `${T}/leave`, member.key)).status, 204);
  const unarchived = await server.media('POST', `${T}/unarchive`, team.key);
  t.equal(unarchived.status, 200);
  t.equal(unarchived.body.archived, false);
  t.match((await teamLogRows(server, team.teamId)).at(-1), { action: 'TEAM_UPDATED', data: { archived: false } });
  t.equal((await server.media('PATCH', T, team.key, { body: { name: 'Active' } })).status, 200, 'changes work again at once');
  t.equal((await uploadMultipart(server, team.teamId, team.key, { content: pngLike(300), fileName: 'new.png' })).status, 201);
  t.equal((await server.admin('POST', `/v1/admin/invites/${invite.id}/accept`, { userId })).status, 201);
});
