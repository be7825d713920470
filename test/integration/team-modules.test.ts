import t from 'tap';
import { expectError, startTestServer } from '../helpers/server.ts';
import { memberWithKey, tableSnapshot, teamLogRows } from '../helpers/team-admin.ts';

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
const team = await server.createTeam('Modules');
const base = `/v1/teams/${team.teamId}/modules`;
const admin = await memberWithKey(server, team.teamId, 'modAdmin', ['team.modules.manage']);
const plain = await memberWithKey(server, team.teamId, 'plain', []);
const moduleRows = () => tableSnapshot(server, 'select * from team_module where team_id = $1 order by module_id', [team.teamId]);
const moduleLogs = async () => (await teamLogRows(server, team.teamId)).filter((row) => row.action.startsWith('MODULE_')).map((row) => [row.action, row.target_identifier, row.team_member_id]);

t.test('bulk update switches modules and logs each real change', async (t) => {
  t.same((await server.media('GET', base, plain.key)).body, [], 'none yet');
  const first = await server.media('PATCH', base, admin.key, { body: { updates: [{ moduleId: 'moduleVoice', active: true }, { moduleId: 'moduleApply', active: false }] } });
  t.equal(first.status, 200);
  t.same(first.body.map((m: any) => [m.moduleId, m.active]), [['moduleApply', false], ['moduleVoice', true]]);
  t.match(first.body[1], { teamId: team.teamId, settings: null, createdAt: String });
  t.same(await moduleLogs(), [['MODULE_ACTIVATED', 'moduleVoice', admin.memberId]], 'switching off a module that was never on logs nothing');
  await server.media('PATCH', base, admin.key, { body: { updates: [{ moduleId: 'moduleVoice', active: true }] } });
  t.equal((await moduleLogs()).length, 1, 'no change, no log');
  await server.media('PATCH', base, admin.key, { body: { updates: [{ moduleId: 'moduleVoice', active: false }, { moduleId: 'moduleBackup', active: true }] } });
  t.same((await moduleLogs()).slice(1).sort(), [['MODULE_ACTIVATED', 'moduleBackup', admin.memberId], ['MODULE_DEACTIVATED', 'moduleVoice', admin.memberId]]);
  const list = await server.media('GET', base, plain.key);
  t.same(list.body.map((m: any) => [m.moduleId, m.active]), [['moduleApply', false], ['moduleBackup', true], ['moduleVoice', false]]);
});

t.test('validation: 400 and nothing changed', async (t) => {
  const before = await moduleRows();
  for (const body of [{ updates: [] }, { updates: [{ moduleId: 'moduleChess', active: true }] },
    { updates: [{ moduleId: 'moduleVoice', active: 'yes' }] }, { updates: [{ moduleId: 'moduleVoice', active: true }, { moduleId: 'moduleVoice', active: false }] },
    { updates: [{ moduleId: 'moduleVoice', active: true, settings: {} }] }, { updates: {} }]) {
    expectError(t, await server.media('PATCH', base, admin.key, { body }), 400, 'error.badRequest');
  }
  expectError(t, await server.media('PATCH', base, admin.key, { body: {} }), 400, 'error.missingArgument.updates');
  expectError(t, await server.media('PATCH', base, admin.key, { body: { updates: [{ moduleId: 'moduleVoice' }] } }), 400, 'error.missingArgument.updates.0.active');
  t.equal(await moduleRows(), before);
});

t.test('switching needs team.modules.manage; an upload key reaches neither route', async (t) => {
  const before = await moduleRows();
  expectError(t, await server.media('PATCH', base, plain.key, { body: { updates: [{ moduleId: 'moduleVoice', active: true }] } }), 403, 'error.forbidden');
  const uploader = await memberWithKey(server, team.teamId, 'uploader', ['team.modules.manage', 'team.media.upload'], { scopes: ['media:upload'] });
  expectError(t, await server.media('GET', base, uploader.key), 403, 'error.forbidden');
  expectError(t, await server.media('PATCH', base, uploader.key, { body: { updates: [{ moduleId: 'moduleVoice', active: true }] } }), 403, 'error.forbidden');
  t.equal(await moduleRows(), before);
});
