import t from 'tap';
import { expectError, startTestServer } from '../helpers/server.ts';
import { memberWithKey, tableSnapshot, teamLogRows } from '../helpers/team-admin.ts';

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
const team = await server.createTeam('Notes');
const base = `/v1/teams/${team.teamId}`;
const writer = await memberWithKey(server, team.teamId, 'writer', ['team.members.view', 'team.members.manage']);
const reader = await memberWithKey(server, team.teamId, 'reader', ['team.members.view']);
const subject = await memberWithKey(server, team.teamId, 'subject', []);
const notes = `${base}/members/${subject.memberId}/notes`;
const noteRows = () => tableSnapshot(server, 'select * from team_member_note where team_id = $1 order by id', [team.teamId]);
const lastLog = async () => (await teamLogRows(server, team.teamId)).at(-1)!;

t.test('create (MEMBER_NOTE_CREATED), list newest first with the creator, delete (MEMBER_NOTE_DELETED)', async (t) => {
  const first = await server.media('POST', notes, writer.key, { body: { note: 'first' } });
  t.equal(first.status, 201);
  t.match(first.body, { teamId: team.teamId, teamMemberId: subject.memberId, note: 'first', creatorTeamMemberId: writer.memberId, creatorTeamMember: { id: writer.memberId, name: 'writer' } });
  t.match(await lastLog(), { action: 'MEMBER_NOTE_CREATED', team_member_id: writer.memberId, target_team_member_id: subject.memberId, target_identifier: first.body.id });
  const byOwner = await server.media('POST', notes, team.key, { body: { note: '  second  ' } });
  t.match(byOwner.body, { note: 'second', creatorTeamMemberId: team.ownerId, creatorTeamMember: { id: team.ownerId, name: 'Owner' } });
  const list = await server.media('GET', notes, reader.key);
  t.equal(list.status, 200);
  t.same(list.body.map((note: any) => note.note), ['second', 'first']);
  t.equal((await server.media('DELETE', `${notes}/${first.body.id}`, writer.key)).status, 204);
  t.match(await lastLog(), { action: 'MEMBER_NOTE_DELETED', target_team_member_id: subject.memberId, target_identifier: first.body.id });
  expectError(t, await server.media('DELETE', `${notes}/${first.body.id}`, writer.key), 404, 'error.notFound');
  expectError(t, await server.media('DELETE', `${base}/members/${reader.memberId}/notes/${byOwner.body.id}`, writer.key), 404, 'error.notFound', );
});

t.test('validation: 400 and nothing stored; unknown member 404', async (t) => {
  const before = await noteRows();
  for (const body of [{ note: '' }, { note: '   ' }, { note: 'x'.repeat(2001) }, { note: 5 }, { note: 'ok', extra: true }]) {
    expectError(t, await server.media('POST', notes, writer.key, { body }), 400, 'error.badRequest');
  }
  expectError(t, await server.media('POST', notes, writer.key, { body: {} }), 400, 'error.missingArgument.note');
  expectError(t, await server.media('POST', `${base}/members/00000000-0000-4000-8000-000000000000/notes`, writer.key, { body: { note: 'x' } }), 404, 'error.notFound');
  expectError(t, await server.media('GET', `${base}/members/nope/notes`, writer.key), 404, 'error.notFound');
  t.equal(await noteRows(), before);
});

t.test('maxMemberNotes: 402 error.teamLimits.maxMemberNotes per member', async (t) => {
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxMemberNotes: 2 });
  t.equal((await server.media('POST', notes, writer.key, { body: { note: 'fills' } })).status, 201);
  const before = await noteRows();
  const over = await server.media('POST', notes, writer.key, { body: { note: 'over' } });
  expectError(t, over, 402, 'error.teamLimits.maxMemberNotes');
  t.equal(over.body.value, 2);
  t.equal(await noteRows(), before);
  t.equal((await server.media('POST', `${base}/members/${reader.memberId}/notes`, writer.key, { body: { note: 'other member' } })).status, 201, 'the limit is per member');
  const racing = await Promise.all([1, 2, 3].map((i) => server.media('POST', `${base}/members/${writer.memberId}/notes`, writer.key, { body: { note: `race ${i}` } })));
  t.same(racing.map((r) => r.status).sort(), [201, 201, 402], 'concurrent notes respect the limit');
});

t.test('permissions: view to list, manage to write and delete; upload keys reach none', async (t) => {
  const before = await noteRows();
  const existing = JSON.parse(before)[0];
  expectError(t, await server.media('GET', notes, subject.key), 403, 'error.forbidden');
  expectError(t, await server.media('POST', notes, reader.key, { body: { note: 'no' } }), 403, 'error.forbidden');
  expectError(t, await server.media('DELETE', `${notes}/${existing.id}`, reader.key), 403, 'error.forbidden');
  const uploader = await memberWithKey(server, team.teamId, 'uploader', ['team.members.view', 'team.members.manage', 'team.media.upload'], { scopes: ['media:upload'] });
  expectError(t, await server.media('GET', notes, uploader.key), 403, 'error.forbidden');
  expectError(t, await server.media('POST', notes, uploader.key, { body: { note: 'no' } }), 403, 'error.forbidden');
  t.equal(await noteRows(), before);
});
