import pino from 'pino';
import t from 'tap';
import { connectPg } from '../helpers/database.ts';
import { expectError, startTestServer } from '../helpers/server.ts';
import { memberWithKey, tableSnapshot, teamLogRows } from '../helpers/team-admin.ts';

// Penalty points, the worry box, team tags and accesses (docs/workspace.md), on one service whose log
// lines (access log included) are kept, so that the worry box's anonymity can be checked in them too.
const logLines: string[] = [];
const server = await startTestServer(t, {
  settings: { RATE_LIMIT_POINTS: 100_000 },
  logger: pino({ level: 'info' }, { write: (line: string) => void logLines.push(line) }),
});
const team = await server.createTeam('People');
const T = `/v1/teams/${team.teamId}`;
const other = await server.createTeam('Others');
const O = `/v1/teams/${other.teamId}`;
const leaders = (await server.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Leaders', permissions: [] })).body;
const crew = (await server.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Crew', permissions: [] })).body;
const otherGroup = (await server.admin('POST', `/v1/admin/teams/${other.teamId}/groups`, { name: 'OtherGroup', permissions: [] })).body;
const manager = await memberWithKey(server, team.teamId, 'manager', ['team.penalties.view', 'team.penalties.manage', 'team.accesses.view', 'team.accesses.manage']);
const viewer = await memberWithKey(server, team.teamId, 'viewer', ['team.penalties.view', 'team.accesses.view']);
const alice = await memberWithKey(server, team.teamId, 'alice', [], { groupIds: [crew.id] });
const leader = await memberWithKey(server, team.teamId, 'leader', [], { groupIds: [leaders.id] });
const otherMember = await memberWithKey(server, other.teamId, 'stranger', []);

const inHours = (hours: number) => new Date(Date.now() + hours * 3600_000).toISOString();
const MISSING = '00000000-0000-4000-8000-000000000000';

async function sql<T = any>(text: string, params: unknown[] = []): Promise<T[]> {
  const client = await connectPg(server.databaseUrl);
  try {
    return (await client.query(text, params)).rows;
  } finally {
    await client.end();
  }
}

t.test('penalty points: given to another member, counted until they expire, listed per member and per team, deleted', async (t) => {
  const points = `${T}/members/${alice.memberId}/penalty-points`;
  const given = await server.media('POST', points, manager.key, { body: { points: 2, message: ' late to the meeting ', expiresAt: inHours(24) } });
  t.equal(given.status, 201);
  t.match(given.body, { teamId: team.teamId, teamMemberId: alice.memberId, committerId: manager.memberId, points: 2, message: 'late to the meeting' });
  t.match((await teamLogRows(server, team.teamId)).at(-1), {
    action: 'PENALTY_POINT_CREATED', team_member_id: manager.memberId, target_team_member_id: alice.memberId, target_identifier: given.body.id, data: { points: 2 },
  });
  const single = await server.media('POST', points, manager.key, { body: { message: 'one more', expiresAt: inHours(48) } });
  t.equal(single.body.points, 1, 'one point by default');
  // An expired point, as time would leave it.
  await sql(`insert into penalty_point (id, team_id, team_member_id, committer_id, points, message, created_at, expires_at)
    values (gen_random_uuid(), $1, $2, $3, 5, 'long ago', now() - interval '2 days', now() - interval '1 day')`, [team.teamId, alice.memberId, manager.memberId]);

  const own = await server.media('GET', points, alice.key);
  t.equal(own.status, 200, 'a member reads its own without the permission');
  t.equal(own.body.totalPoints, 3, 'the current total counts only unexpired points');
  t.same(own.body.data.map((point: any) => point.message), ['one more', 'late to the meeting']);
  t.equal(own.body.count, 2);
  const withExpired = await server.media('GET', `${points}?includeExpired=true`, viewer.key);
  t.equal(withExpired.body.count, 3);
  t.equal(withExpired.body.totalPoints, 3, 'the total is the current one whatever the filter');
  expectError(t, await server.media('GET', `${T}/members/${manager.memberId}/penalty-points`, alice.key), 403, 'error.forbidden');

  const teamList = await server.media('GET', `${T}/penalty-points?teamMemberId=${alice.memberId}`, viewer.key, { headers: { pageSize: '1' } });
  t.equal(teamList.status, 200);
  t.equal(teamList.body.count, 2);
  t.equal(teamList.body.data.length, 1, 'paged');
  expectError(t, await server.media('GET', `${T}/penalty-points`, alice.key), 403, 'error.forbidden');

  expectError(t, await server.media('DELETE', `${T}/penalty-points/${single.body.id}`, viewer.key), 403, 'error.forbidden');
  t.equal((await server.media('DELETE', `${T}/penalty-points/${single.body.id}`, manager.key)).status, 204);
  t.match((await teamLogRows(server, team.teamId)).at(-1), { action: 'PENALTY_POINT_DELETED', target_team_member_id: alice.memberId, target_identifier: single.body.id });
  expectError(t, await server.media('DELETE', `${T}/penalty-points/${single.body.id}`, manager.key), 404, 'error.notFound');
  t.equal((await server.media('GET', points, alice.key)).body.totalPoints, 2);
});

t.test('penalty points: not to oneself (403), bad input 400 with nothing stored, other teams\' members 404', async (t) => {
  const rows = () => tableSnapshot(server, 'select * from penalty_point order by id', []);
  const before = await rows();
  const points = `${T}/members/${alice.memberId}/penalty-points`;
  expectError(t, await server.media('POST', `${T}/members/${manager.memberId}/penalty-points`, manager.key, { body: { message: 'me', expiresAt: inHours(1) } }), 403, 'error.forbidden');
  expectError(t, await server.media('POST', `${T}/members/${team.ownerId}/penalty-points`, team.key, { body: { message: 'me', expiresAt: inHours(1) } }), 403, 'error.forbidden');
  for (const body of [
    { message: 'x', expiresAt: new Date(Date.now() - 1000).toISOString() }, { message: 'x', expiresAt: 'tomorrow' }, { message: 'x', expiresAt: inHours(24 * 365 * 11) },
    { message: ' ', expiresAt: inHours(1) }, { message: 'x', expiresAt: inHours(1), points: 0 }, { message: 'x', expiresAt: inHours(1), points: 1.5 },
    { message: 'x', expiresAt: inHours(1), points: 1001 }, { message: 'x', expiresAt: inHours(1), extra: true },
  ]) {
    expectError(t, await server.media('POST', points, manager.key, { body }), 400, 'error.badRequest');
  }
  expectError(t, await server.media('POST', points, manager.key, { body: { message: 'x' } }), 400, 'error.missingArgument.expiresAt');
  expectError(t, await server.media('POST', points, alice.key, { body: { message: 'x', expiresAt: inHours(1) } }), 403, 'error.forbidden');
  expectError(t, await server.media('POST', `${T}/members/${otherMember.memberId}/penalty-points`, manager.key, { body: { message: 'x', expiresAt: inHours(1) } }), 404, 'error.notFound');
  expectError(t, await server.media('GET', `${T}/members/${otherMember.memberId}/penalty-points`, manager.key), 404, 'error.notFound');
  expectError(t, await server.media('GET', `${points}?teamMemberId=${alice.memberId}`, manager.key), 400, 'error.badRequest');
  expectError(t, await server.media('GET', `${T}/penalty-points?includeExpired=yes`, manager.key), 400, 'error.badRequest');
  t.equal(await rows(), before, 'nothing stored');
});

t.test('worry box: anonymous means anonymous, in every answer, the team log, the table and the service log', async (t) => {
  const author = await memberWithKey(server, team.teamId, 'anon_author', [], { groupIds: [crew.id] });
  const logBefore = await teamLogRows(server, team.teamId);
  const linesBefore = logLines.length;
  const answers: string[] = [];
  const call = async (method: string, path: string, key: string, body?: unknown) => {
    const response = await server.media(method, path, key, body === undefined ? {} : { body });
    answers.push(JSON.stringify(response.body ?? null));
    return response;
  };

  const written = await call('POST', `${T}/worry-box`, author.key, { forGroupId: leaders.id, message: 'The shift plan is unfair', isAnonymous: true });
  t.equal(written.status, 201);
  t.match(written.body, { teamMemberId: null, isAnonymous: true, forGroupId: leaders.id, message: 'The shift plan is unfair', answeredAt: null, answer: null });
  const second = await call('POST', `${T}/worry-box`, author.key, { forGroupId: crew.id, message: 'Also this', isAnonymous: true });
  t.equal(second.status, 201, 'to a group the author is in, too');

  const forLeaders = await call('GET', `${T}/worry-box`, leader.key);
  t.same(forLeaders.body.entries.map((entry: any) => entry.id), [written.body.id], 'the leaders read the entries for their group');
  t.equal(forLeaders.body.totalEntries, 1);
  t.equal((await call('GET', `${T}/worry-box/${written.body.id}`, leader.key)).status, 200);
  const all = await call('GET', `${T}/worry-box`, team.key);
  t.ok(all.body.entries.length >= 2, 'team.worryBox.manage (the owner) reads every group\'s');
  const mine = await call('GET', `${T}/worry-box/mine`, author.key);
  t.same(mine.body.entries.map((entry: any) => entry.id).sort(), [written.body.id, second.body.id].sort(), 'the author lists its own anonymous entries');
  t.ok(mine.body.entries.every((entry: any) => entry.teamMemberId === null), 'still without its id');
  t.equal((await call('GET', `${T}/worry-box/${written.body.id}`, author.key)).status, 200, 'the author reads its entry');
  t.same((await call('GET', `${T}/worry-box/mine`, leader.key)).body, { totalEntries: 0, entries: [] }, 'no one else finds them as theirs');
  expectError(t, await call('GET', `${T}/worry-box/${written.body.id}`, alice.key), 404, 'error.notFound');
  expectError(t, await call('POST', `${T}/worry-box/${second.body.id}/answer`, author.key, { answer: 'I answer myself' }), 403, 'error.forbidden');

  const answered = await call('POST', `${T}/worry-box/${written.body.id}/answer`, leader.key, { answer: ' We will talk about it. ' });
  t.equal(answered.status, 200);
  t.match(answered.body, { answer: 'We will talk about it.', handledByTeamMemberId: leader.memberId, teamMemberId: null });
  t.ok(answered.body.answeredAt);
  expectError(t, await call('POST', `${T}/worry-box/${written.body.id}/answer`, team.key, { answer: 'again' }), 409, 'error.conflict');
  t.match((await call('GET', `${T}/worry-box/mine`, author.key)).body.entries, [{ answer: null }, { answer: 'We will talk about it.' }], 'the author reads the answer');
  t.same((await call('GET', `${T}/worry-box?answered=false`, leader.key)).body.totalEntries, 0);

  const text = answers.join('\n');
  t.ok(text.includes(written.body.id), 'the answers were collected');
  t.notOk(text.includes(author.memberId), 'no answer names the author');
  t.same(await teamLogRows(server, team.teamId), logBefore, 'nothing in the team log');
  const stored = await sql('select row_to_json(e)::text as row from worry_box_entry e');
  t.ok(stored.length >= 2);
  t.notOk(stored.some((row) => row.row.includes(author.memberId)), 'no column of the table holds the author id');
  const lines = logLines.slice(linesBefore).join('\n');
  t.match(lines, /worry-box/, 'the service logged these requests');
  t.notOk(lines.includes(author.memberId), 'no service log line names the author');
});

t.test('worry box: named entries, who may write, read, answer and delete; bad input', async (t) => {
  const named = await server.media('POST', `${T}/worry-box`, alice.key, { body: { forGroupId: leaders.id, message: 'Signed by me' } });
  t.equal(named.status, 201);
  t.match(named.body, { teamMemberId: alice.memberId, isAnonymous: false });
  t.ok((await server.media('GET', `${T}/worry-box/mine`, alice.key)).body.entries.some((entry: any) => entry.id === named.body.id));
  t.same((await server.media('GET', `${T}/worry-box?forGroupId=${leaders.id}&answered=false`, leader.key)).body.entries.map((entry: any) => entry.id), [named.body.id]);
  t.same((await server.media('GET', `${T}/worry-box`, alice.key)).body.entries.filter((entry: any) => entry.forGroupId === leaders.id), [], 'not in the group: not listed');

  const rows = () => tableSnapshot(server, 'select * from worry_box_entry order by id', []);
  const before = await rows();
  expectError(t, await server.media('POST', `${T}/worry-box`, team.key, { body: { forGroupId: leaders.id, message: 'from a key' } }), 403, 'error.forbidden');
  expectError(t, await server.media('GET', `${T}/worry-box/mine`, team.key), 403, 'error.forbidden');
  for (const body of [{ forGroupId: leaders.id, message: '' }, { forGroupId: leaders.id, message: 'x', isAnonymous: 'yes' }, { forGroupId: 'nope', message: 'x' },
    { forGroupId: leaders.id, message: 'x'.repeat(4001) }, { forGroupId: leaders.id, message: 'x', teamMemberId: leader.memberId }]) {
    expectError(t, await server.media('POST', `${T}/worry-box`, alice.key, { body }), 400, 'error.badRequest');
  }
  expectError(t, await server.media('POST', `${T}/worry-box`, alice.key, { body: { forGroupId: leaders.id } }), 400, 'error.missingArgument.message');
  expectError(t, await server.media('POST', `${T}/worry-box`, alice.key, { body: { forGroupId: otherGroup.id, message: 'x' } }), 404, 'error.notFound');
  expectError(t, await server.media('POST', `${T}/worry-box/${named.body.id}/answer`, leader.key, { body: { answer: '' } }), 400, 'error.badRequest');
  expectError(t, await server.media('POST', `${T}/worry-box/${named.body.id}/answer`, alice.key, { body: { answer: 'mine' } }), 404, 'error.notFound');
  expectError(t, await server.media('GET', `${T}/worry-box?answered=maybe`, alice.key), 400, 'error.badRequest');
  t.equal(await rows(), before, 'nothing stored');

  expectError(t, await server.media('DELETE', `${T}/worry-box/${named.body.id}`, leader.key), 403, 'error.forbidden');
  t.equal((await server.media('DELETE', `${T}/worry-box/${named.body.id}`, team.key)).status, 204);
  expectError(t, await server.media('GET', `${T}/worry-box/${named.body.id}`, team.key), 404, 'error.notFound');
  expectError(t, await server.media('DELETE', `${T}/worry-box/${named.body.id}`, team.key), 404, 'error.notFound');
});

t.test('team tags: slug unique per team, colors and icons, on to-dos', async (t) => {
  const tagger = await memberWithKey(server, team.teamId, 'tagger', ['team.tags.manage']);
  const board = (await server.media('POST', `${T}/todo-boards`, team.key, { body: { title: 'Board' } })).body;
  const todo = (await server.media('POST', `${T}/todo-boards/${board.id}/todos`, team.key, { body: { title: 'Fix it' } })).body;

  const bug = await server.media('POST', `${T}/team-tags`, tagger.key, { body: { name: 'Bug Report', color: '#f00', icon: 'bug' } });
  t.equal(bug.status, 201);
  t.match(bug.body, { teamId: team.teamId, name: 'Bug Report', slug: 'bug-report', color: '#f00', icon: 'bug' });
  const accented = await server.media('POST', `${T}/team-tags`, tagger.key, { body: { name: 'Ärger im Büro!', supportIssueId: null } });
  t.equal(accented.body.slug, 'arger-im-buro');
  t.equal((await server.media('POST', `${O}/team-tags`, other.key, { body: { name: 'Bug Report' } })).status, 201, 'the same slug in another team');

  const rows = () => tableSnapshot(server, 'select * from team_tag order by id', []);
  const links = () => tableSnapshot(server, 'select * from team_tag_todo order by tag_id, todo_id', []);
  const before = await rows();
  expectError(t, await server.media('POST', `${T}/team-tags`, tagger.key, { body: { name: ' bug   REPORT ' } }), 409, 'error.conflict');
  for (const body of [{ name: '!!!' }, { name: '' }, { name: 'x'.repeat(65) }, { name: 'x', color: 'red' }, { name: 'x', icon: 'i'.repeat(65) },
    { name: 'x', supportIssueId: 'issue-1' }, { name: 'x', todoId: 'nope' }, { name: 'x', other: 1 }]) {
    expectError(t, await server.media('POST', `${T}/team-tags`, tagger.key, { body }), 400, 'error.badRequest');
  }
  expectError(t, await server.media('POST', `${T}/team-tags`, tagger.key, { body: { name: 'On a to-do', todoId: todo.id } }), 403, 'error.forbidden');
  expectError(t, await server.media('POST', `${T}/team-tags`, alice.key, { body: { name: 'Mine' } }), 403, 'error.forbidden');
  expectError(t, await server.media('POST', `${T}/team-tags`, team.key, { body: { name: 'Elsewhere', todoId: MISSING } }), 404, 'error.notFound');
  expectError(t, await server.media('PATCH', `${T}/team-tags/${accented.body.id}`, tagger.key, { body: { name: 'bug-report' } }), 409, 'error.conflict');
  t.equal(await rows(), before, 'nothing stored');

  const onTodo = await server.media('POST', `${T}/team-tags`, team.key, { body: { name: 'Urgent', todoId: todo.id } });
  t.equal(onTodo.status, 201, 'with team.todos.manage too, created and put on the to-do');
  t.equal((await server.media('PUT', `${T}/todos/${todo.id}/team-tags/${bug.body.id}`, team.key)).status, 204);
  t.equal((await server.media('PUT', `${T}/todos/${todo.id}/team-tags/${bug.body.id}`, team.key)).status, 204, 'again: a no-op');
  const tagsOf = async () => (await server.media('GET', `${T}/team-tags?todoId=${todo.id}`, alice.key)).body.data.map((tag: any) => tag.slug);
  t.same(await tagsOf(), ['bug-report', 'urgent'], 'any full key reads them');
  expectError(t, await server.media('PUT', `${T}/todos/${todo.id}/team-tags/${bug.body.id}`, tagger.key), 403, 'error.forbidden');
  expectError(t, await server.media('PUT', `${T}/todos/${todo.id}/team-tags/${MISSING}`, team.key), 404, 'error.notFound');
  expectError(t, await server.media('GET', `${T}/team-tags?todoId=${MISSING}`, alice.key), 404, 'error.notFound');
  t.equal((await server.media('DELETE', `${T}/todos/${todo.id}/team-tags/${onTodo.body.id}`, team.key)).status, 204);
  t.equal((await server.media('DELETE', `${T}/todos/${todo.id}/team-tags/${onTodo.body.id}`, team.key)).status, 204, 'not on it: a no-op');
  t.same(await tagsOf(), ['bug-report']);

  const renamed = await server.media('PATCH', `${T}/team-tags/${accented.body.id}`, tagger.key, { body: { name: 'Office', color: null } });
  t.match(renamed.body, { name: 'Office', slug: 'office', color: null });
  const list = await server.media('GET', `${T}/team-tags`, alice.key);
  t.same(list.body.data.map((tag: any) => tag.name), ['Bug Report', 'Office', 'Urgent']);
  t.equal(list.body.count, 3);
  t.equal((await server.media('GET', `${T}/team-tags/${bug.body.id}`, alice.key)).body.slug, 'bug-report');
  t.equal((await server.media('DELETE', `${T}/team-tags/${bug.body.id}`, tagger.key)).status, 204);
  t.same(await tagsOf(), [], 'a deleted tag comes off its to-dos');
  expectError(t, await server.media('GET', `${T}/team-tags/${bug.body.id}`, alice.key), 404, 'error.notFound');
  t.equal((await server.media('DELETE', `${T}/todos/${todo.id}`, team.key)).status, 204, 'a tagged to-do can be deleted');
});

t.test('accesses: CRUD, direct and group assignments, effective accesses, expiry at read time', async (t) => {
  const created = await server.media('POST', `${T}/accesses`, manager.key, { body: { name: 'Game panel', description: 'Admin panel of the server', icon: 'panel' } });
  t.equal(created.status, 201);
  t.match(created.body, { name: 'Game panel', description: 'Admin panel of the server', icon: 'panel' });
  const accessPath = `${T}/accesses/${created.body.id}`;
  t.match((await teamLogRows(server, team.teamId)).at(-1), { action: 'DOCUMENTATION_RIGHT_CREATED', team_member_id: manager.memberId, target_identifier: created.body.id });

  const direct = await server.media('POST', `${accessPath}/assignments`, manager.key, { body: { teamMemberId: alice.memberId, note: 'for the event', expiresAt: inHours(2) } });
  t.equal(direct.status, 201);
  t.match(direct.body, { accessId: created.body.id, teamMemberId: alice.memberId, note: 'for the event', assignedById: manager.memberId, teamMember: { id: alice.memberId, name: 'alice' }, assignedBy: { name: 'manager' } });
  t.match((await teamLogRows(server, team.teamId)).at(-1), { action: 'DOCUMENTATION_RIGHT_ASSIGNED', target_team_member_id: alice.memberId, target_identifier: created.body.id });
  const group = await server.media('POST', `${accessPath}/group-assignments`, manager.key, { body: { groupId: leaders.id } });
  t.equal(group.status, 201);
  t.match(group.body, { groupId: leaders.id, group: { name: 'Leaders' }, expiresAt: null, note: null });
  t.match((await teamLogRows(server, team.teamId)).at(-1), { action: 'DOCUMENTATION_RIGHT_GROUP_ASSIGNED', data: { groupId: leaders.id } });

  const rows = () => tableSnapshot(server, 'select * from team_access order by id', []);
  const assignmentRows = () => tableSnapshot(server, 'select * from team_access_assignment order by id', []);
  const groupRows = () => tableSnapshot(server, 'select * from team_access_group_assignment order by id', []);
  const before = [await rows(), await assignmentRows(), await groupRows()].join();
  expectError(t, await server.media('POST', `${accessPath}/assignments`, manager.key, { body: { teamMemberId: alice.memberId } }), 409, 'error.conflict');
  expectError(t, await server.media('POST', `${accessPath}/group-assignments`, manager.key, { body: { groupId: leaders.id } }), 409, 'error.conflict');
  for (const body of [{ teamMemberId: leader.memberId, expiresAt: new Date(Date.now() - 1000).toISOString() }, { teamMemberId: leader.memberId, note: 'n'.repeat(501) },
    { teamMemberId: 'nope' }, { teamMemberId: leader.memberId, assignedById: alice.memberId }]) {
    expectError(t, await server.media('POST', `${accessPath}/assignments`, manager.key, { body }), 400, 'error.badRequest');
  }
  expectError(t, await server.media('POST', `${accessPath}/assignments`, manager.key, { body: {} }), 400, 'error.missingArgument.teamMemberId');
  expectError(t, await server.media('POST', `${accessPath}/assignments`, manager.key, { body: { teamMemberId: otherMember.memberId } }), 404, 'error.notFound');
  expectError(t, await server.media('POST', `${accessPath}/group-assignments`, manager.key, { body: { groupId: otherGroup.id } }), 404, 'error.notFound');
  for (const body of [{ name: '' }, { name: 'x'.repeat(101) }, { name: 'x', icon: 'i'.repeat(65) }, { name: 'x', color: '#fff' }]) {
    expectError(t, await server.media('POST', `${T}/accesses`, manager.key, { body }), 400, 'error.badRequest');
  }
  expectError(t, await server.media('POST', `${T}/accesses`, viewer.key, { body: { name: 'x' } }), 403, 'error.forbidden');
  expectError(t, await server.media('POST', `${accessPath}/assignments`, viewer.key, { body: { teamMemberId: leader.memberId } }), 403, 'error.forbidden');
  t.equal([await rows(), await assignmentRows(), await groupRows()].join(), before, 'nothing stored');

  const list = await server.media('GET', `${T}/accesses`, viewer.key);
  t.match(list.body, { data: [{ id: created.body.id, assignmentCount: 1, groupAssignmentCount: 1 }], count: 1 });
  const detail = await server.media('GET', accessPath, viewer.key);
  t.match(detail.body, { assignments: [{ id: direct.body.id, teamMemberId: alice.memberId }], groupAssignments: [{ id: group.body.id, groupId: leaders.id }] });
  t.match((await server.media('GET', `${T}/members/${alice.memberId}/accesses`, alice.key)).body,
    { data: [{ source: 'direct', id: direct.body.id, access: { id: created.body.id, name: 'Game panel' } }], count: 1 }, 'a member reads its own');
  t.match((await server.media('GET', `${T}/members/${leader.memberId}/accesses`, viewer.key)).body,
    { data: [{ source: 'group', groupId: leaders.id, access: { name: 'Game panel' } }], count: 1 }, 'through its group');
  expectError(t, await server.media('GET', `${T}/members/${leader.memberId}/accesses`, alice.key), 403, 'error.forbidden');
  expectError(t, await server.media('GET', `${T}/accesses`, alice.key), 403, 'error.forbidden');

  // Time passes: both assignments expire. No job: every read leaves them out.
  await sql("update team_access_assignment set expires_at = now() - interval '1 second' where access_id = $1", [created.body.id]);
  await sql("update team_access_group_assignment set expires_at = now() - interval '1 second' where access_id = $1", [created.body.id]);
  t.match((await server.media('GET', `${T}/accesses`, viewer.key)).body.data, [{ assignmentCount: 0, groupAssignmentCount: 0 }]);
  t.match((await server.media('GET', accessPath, viewer.key)).body, { assignments: [], groupAssignments: [] });
  t.same((await server.media('GET', `${T}/members/${alice.memberId}/accesses`, alice.key)).body, { data: [], count: 0 });
  t.same((await server.media('GET', `${T}/members/${leader.memberId}/accesses`, leader.key)).body, { data: [], count: 0 });
  expectError(t, await server.media('DELETE', `${accessPath}/assignments/${direct.body.id}`, manager.key), 404, 'error.notFound');
  const again = await server.media('POST', `${accessPath}/assignments`, manager.key, { body: { teamMemberId: alice.memberId } });
  t.equal(again.status, 201, 'an expired assignment is replaced');
  t.not(again.body.id, direct.body.id, 'with a new id');
  const groupAgain = await server.media('POST', `${accessPath}/group-assignments`, manager.key, { body: { groupId: leaders.id, note: 'renewed' } });
  t.equal(groupAgain.status, 201);

  // A member who is kicked loses its direct accesses.
  const kicked = await memberWithKey(server, team.teamId, 'kicked', []);
  t.equal((await server.media('POST', `${accessPath}/assignments`, manager.key, { body: { teamMemberId: kicked.memberId } })).status, 201);
  t.equal((await server.media('GET', `${T}/accesses`, viewer.key)).body.data[0].assignmentCount, 2);
  t.equal((await server.media('DELETE', `${T}/members/${kicked.memberId}`, team.key)).status, 204);
  t.equal((await server.media('GET', `${T}/accesses`, viewer.key)).body.data[0].assignmentCount, 1);

  t.equal((await server.media('DELETE', `${accessPath}/assignments/${again.body.id}`, manager.key)).status, 204);
  t.match((await teamLogRows(server, team.teamId)).at(-1), { action: 'DOCUMENTATION_RIGHT_UNASSIGNED', target_team_member_id: alice.memberId });
  expectError(t, await server.media('DELETE', `${accessPath}/group-assignments/${again.body.id}`, manager.key), 404, 'error.notFound');
  t.equal((await server.media('DELETE', `${accessPath}/group-assignments/${groupAgain.body.id}`, manager.key)).status, 204);
  t.match((await teamLogRows(server, team.teamId)).at(-1), { action: 'DOCUMENTATION_RIGHT_GROUP_UNASSIGNED', data: { groupId: leaders.id } });

  const patched = await server.media('PATCH', accessPath, manager.key, { body: { name: 'Panel', description: null } });
  t.match(patched.body, { name: 'Panel', description: null, icon: 'panel' });
  t.match((await teamLogRows(server, team.teamId)).at(-1), { action: 'DOCUMENTATION_RIGHT_UPDATED', data: { name: 'Panel', description: null } });
  t.equal((await server.media('DELETE', accessPath, manager.key)).status, 204);
  t.match((await teamLogRows(server, team.teamId)).at(-1), { action: 'DOCUMENTATION_RIGHT_DELETED', target_identifier: created.body.id });
  expectError(t, await server.media('GET', accessPath, viewer.key), 404, 'error.notFound');
});

t.test('an archived team reads but changes none of them (403 error.team.archived)', async (t) => {
  const tag = (await server.media('POST', `${T}/team-tags`, team.key, { body: { name: 'Before archive' } })).body;
  const access = (await server.media('POST', `${T}/accesses`, team.key, { body: { name: 'Before archive' } })).body;
  const entry = (await server.media('POST', `${T}/worry-box`, alice.key, { body: { forGroupId: leaders.id, message: 'Before archive' } })).body;
  t.equal((await server.media('POST', `${T}/archive`, team.key)).status, 200);
  for (const [method, path, key, body] of [
    ['POST', `${T}/members/${alice.memberId}/penalty-points`, manager.key, { message: 'x', expiresAt: inHours(1) }],
    ['POST', `${T}/worry-box`, alice.key, { forGroupId: leaders.id, message: 'x' }],
    ['POST', `${T}/worry-box/${entry.id}/answer`, leader.key, { answer: 'x' }],
    ['POST', `${T}/team-tags`, team.key, { name: 'During' }],
    ['PATCH', `${T}/team-tags/${tag.id}`, team.key, { name: 'During' }],
    ['POST', `${T}/accesses`, team.key, { name: 'During' }],
    ['POST', `${T}/accesses/${access.id}/assignments`, team.key, { teamMemberId: alice.memberId }],
    ['DELETE', `${T}/accesses/${access.id}`, team.key, undefined],
  ] as const) {
    expectError(t, await server.media(method, path, key, body === undefined ? {} : { body }), 403, 'error.team.archived');
  }
  t.equal((await server.media('GET', `${T}/team-tags/${tag.id}`, team.key)).body.name, 'Before archive');
  t.equal((await server.media('GET', `${T}/accesses/${access.id}`, team.key)).status, 200);
  t.equal((await server.media('GET', `${T}/worry-box/${entry.id}`, leader.key)).body.answer, null);
  t.equal((await server.media('POST', `${T}/unarchive`, team.key)).status, 200);
});
