import t from 'tap';
import { connectPg } from '../helpers/database.ts';
import { expectError, startTestServer, type TestServer } from '../helpers/server.ts';
import { memberWithKey, tableSnapshot, teamLogRows } from '../helpers/team-admin.ts';

// Meetings and logoffs (docs/workspace.md "Meetings and logoffs"). Two instances on one database:
// the races (transitions, maxPlannedMeetings, overlapping logoffs) go half to each.
const settings = { RATE_LIMIT_POINTS: 100_000 };
const first = await startTestServer(t, { settings });
const second = await startTestServer(t, { settings, databaseUrl: first.databaseUrl });
const team = await first.createTeam('Meetings');
const other = await first.createTeam('Elsewhere');
const T = `/v1/teams/${team.teamId}`;
const group = (await first.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Moderators', permissions: [] })).body;
const manager = await memberWithKey(first, team.teamId, 'manager', ['team.meetings.view', 'team.meetings.manage', 'team.logoffs.manage']);
const viewer = await memberWithKey(first, team.teamId, 'viewer', ['team.meetings.view']);
const moderator = await memberWithKey(first, team.teamId, 'moderator', [], { groupIds: [group.id] });
const plain = await memberWithKey(first, team.teamId, 'plain', []);
const otherGroup = (await first.admin('POST', `/v1/admin/teams/${other.teamId}/groups`, { name: 'Theirs', permissions: [] })).body;
const otherMeeting = (await first.media('POST', `/v1/teams/${other.teamId}/meetings`, other.key, { body: { title: 'Theirs', dateTime: '2031-01-01T10:00:00Z' } })).body;
const missing = '00000000-0000-4000-8000-000000000000';

const rows = () => tableSnapshot(first, `select (select json_agg(m order by id) from meeting m where team_id = $1) as meetings,
  (select json_agg(mm order by meeting_id, team_member_id) from meeting_member mm join meeting m on m.id = mm.meeting_id where m.team_id = $1) as members,
  (select json_agg(mg order by meeting_id, group_id) from meeting_group mg join meeting m on m.id = mg.meeting_id where m.team_id = $1) as groups,
  (select json_agg(l order by id) from logoff l where team_id = $1) as logoffs`, [team.teamId]);
/** Answers `status`, or throws: for the set-up steps of the cases (their own assertions are the cases'). */
function ok<R extends { status: number; body: any }>(status: number, response: R): R {
  if (response.status !== status) throw new Error(`expected ${status}, got ${response.status}: ${JSON.stringify(response.body)}`);
  return response;
}
const setLimits = async (limits: Record<string, number | null>) => ok(200, await first.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, limits));
const plan = (title: string, extra: Record<string, unknown> = {}, server: TestServer = first) =>
  server.media('POST', `${T}/meetings`, manager.key, { body: { title, dateTime: '2031-03-01T18:00:00+01:00', ...extra } });
async function sql(text: string, params: unknown[]): Promise<void> {
  const client = await connectPg(first.databaseUrl);
  try {
    await client.query(text, params);
  } finally {
    await client.end();
  }
}
/** A meeting of the team brought into `state` through the routes. */
async function meetingIn(state: string): Promise<string> {
  const created = ok(201, await plan(`In ${state}`));
  const path = `${T}/meetings/${created.body.id}`;
  const steps: Record<string, string[]> = { PLANNED: [], RUNNING: ['start'], FINISHED: ['start', 'end'], LOCKED: ['start', 'end', 'lock'], CANCELLED: ['cancel'] };
  for (const step of steps[state]!) ok(200, await first.media('POST', `${path}/${step}`, manager.key));
  return created.body.id;
}

t.test('meetings: create with participants, read, list, change, delete', async (t) => {
  await setLimits({ maxPlannedMeetings: null });
  const created = await plan('  Staff meeting  ', {
    agenda: '1. Reports', meetingPoint: 'Voice #1', teamMemberIds: [viewer.memberId, viewer.memberId.toUpperCase()], groupIds: [group.id],
  });
  t.equal(created.status, 201);
  t.match(created.body, {
    teamId: team.teamId, title: 'Staff meeting', dateTime: '2031-03-01T17:00:00.000Z', agenda: '1. Reports', meetingPoint: 'Voice #1', protocol: null,
    state: 'PLANNED', startedAt: null, endedAt: null, cancelledAt: null, creatorTeamMemberId: manager.memberId,
    teamMembers: [{ id: viewer.memberId, name: 'viewer' }], groups: [{ id: group.id, name: 'Moderators' }],
  });
  t.same(JSON.parse(created.body.participants), { teamMemberIds: [viewer.memberId], groupIds: [group.id] }, 'the spec\'s text field, duplicates once');
  const path = `${T}/meetings/${created.body.id}`;
  t.same((await first.media('GET', path, viewer.key)).body, created.body);

  const later = await plan('Later', { dateTime: '2031-04-01T10:00:00Z' });
  const list = await first.media('GET', `${T}/meetings`, viewer.key);
  t.equal(list.status, 200);
  t.same(list.body.data.map((meeting: any) => meeting.title), ['Later', 'Staff meeting'], 'newest dateTime first');
  t.equal(list.body.count, 2);
  t.notOk('teamMembers' in list.body.data[0], 'the list has the plain Meeting');
  const paged = await first.media('GET', `${T}/meetings`, viewer.key, { headers: { pageSize: '1', pageNumber: '2' } });
  t.same(paged.body.data.map((meeting: any) => meeting.title), ['Staff meeting']);
  t.equal(paged.body.count, 2);
  t.equal((await first.media('GET', `${T}/meetings?state=RUNNING`, viewer.key)).body.count, 0);
  expectError(t, await first.media('GET', `${T}/meetings?state=DONE`, viewer.key), 400, 'error.badRequest');

  const changed = await first.media('PATCH', path, manager.key, { body: { title: 'Renamed', teamMemberIds: [plain.memberId], protocol: 'notes' } });
  t.equal(changed.status, 200);
  t.match(changed.body, { title: 'Renamed', protocol: 'notes', agenda: '1. Reports', teamMembers: [{ id: plain.memberId }], groups: [{ id: group.id }] });
  t.match((await first.media('PATCH', path, manager.key, { body: { groupIds: [], meetingPoint: null } })).body, { groups: [], meetingPoint: null, teamMembers: [{ id: plain.memberId }] });

  t.equal((await first.media('DELETE', `${T}/meetings/${later.body.id}`, manager.key)).status, 204);
  expectError(t, await first.media('GET', `${T}/meetings/${later.body.id}`, viewer.key), 404, 'error.notFound');
  expectError(t, await first.media('DELETE', `${T}/meetings/${later.body.id}`, manager.key), 404, 'error.notFound');
  t.equal((await first.media('DELETE', path, manager.key)).status, 204);
});

t.test('meetings: bad input is 400 and stores nothing; foreign participants 404; permissions 403', async (t) => {
  const kept = (await plan('Kept')).body;
  const before = await rows();
  const bad: [Record<string, unknown>, string][] = [
    [{ dateTime: '2031-01-01T00:00:00Z' }, 'error.missingArgument.title'],
    [{ title: 'x' }, 'error.missingArgument.dateTime'],
    [{ title: '   ', dateTime: '2031-01-01T00:00:00Z' }, 'error.badRequest'],
    [{ title: 'x'.repeat(201), dateTime: '2031-01-01T00:00:00Z' }, 'error.badRequest'],
    [{ title: 'x', dateTime: 'tomorrow' }, 'error.badRequest'],
    [{ title: 'x', dateTime: '2031-01-01T00:00:00' }, 'error.badRequest'],
    [{ title: 'x', dateTime: '2031-01-01T00:00:00Z', teamMemberIds: ['nope'] }, 'error.badRequest'],
    [{ title: 'x', dateTime: '2031-01-01T00:00:00Z', groupIds: 'all' }, 'error.badRequest'],
    [{ title: 'x', dateTime: '2031-01-01T00:00:00Z', state: 'RUNNING' }, 'error.badRequest'],
    [{ title: 'x', dateTime: '2031-01-01T00:00:00Z', meetingPoint: 'x'.repeat(201) }, 'error.badRequest'],
  ];
  for (const [body, key] of bad) expectError(t, await first.media('POST', `${T}/meetings`, manager.key, { body }), 400, key);
  expectError(t, await first.media('POST', `${T}/meetings`, manager.key, { body: '[1]' }), 400, 'error.badRequest');
  for (const body of [{ title: '' }, { dateTime: 5 }, { participants: '{}' }]) {
    expectError(t, await first.media('PATCH', `${T}/meetings/${kept.id}`, manager.key, { body }), 400, 'error.badRequest');
  }
  for (const body of [{ teamMemberIds: [other.ownerId] }, { groupIds: [otherGroup.id] }, { teamMemberIds: [missing] }]) {
    expectError(t, await first.media('POST', `${T}/meetings`, manager.key, { body: { title: 'x', dateTime: '2031-01-01T00:00:00Z', ...body } }), 404, 'error.notFound');
    expectError(t, await first.media('PATCH', `${T}/meetings/${kept.id}`, manager.key, { body: { title: 'changed', ...body } }), 404, 'error.notFound');
  }
  for (const path of [`${T}/meetings/${otherMeeting.id}`, `${T}/meetings/${missing}`, `${T}/meetings/not-a-uuid`]) {
    expectError(t, await first.media('GET', path, manager.key), 404, 'error.notFound');
    expectError(t, await first.media('PATCH', path, manager.key, { body: { title: 'mine' } }), 404, 'error.notFound');
    expectError(t, await first.media('POST', `${path}/start`, manager.key), 404, 'error.notFound');
    expectError(t, await first.media('DELETE', path, manager.key), 404, 'error.notFound');
  }
  expectError(t, await first.media('POST', `${T}/meetings`, viewer.key, { body: { title: 'x', dateTime: '2031-01-01T00:00:00Z' } }), 403, 'error.forbidden');
  expectError(t, await first.media('POST', `${T}/meetings/${kept.id}/start`, viewer.key), 403, 'error.forbidden');
  expectError(t, await first.media('DELETE', `${T}/meetings/${kept.id}`, viewer.key), 403, 'error.forbidden');
  expectError(t, await first.media('GET', `${T}/meetings`, plain.key), 403, 'error.forbidden');
  t.equal(await rows(), before, 'nothing stored, nothing changed');
  t.same((await first.media('GET', `/v1/teams/${other.teamId}/meetings/${otherMeeting.id}`, other.key)).body.title, 'Theirs', 'the other team\'s meeting is untouched');
  t.equal((await first.media('DELETE', `${T}/meetings/${kept.id}`, manager.key)).status, 204);
});

t.test('the state machine: every transition from every state, and what a change may touch in each', async (t) => {
  const allowed: Record<string, Record<string, string>> = {
    PLANNED: { start: 'RUNNING', cancel: 'CANCELLED' },
    RUNNING: { end: 'FINISHED' },
    FINISHED: { lock: 'LOCKED' },
    LOCKED: {},
    CANCELLED: {},
  };
  const stamps: Record<string, string> = { start: 'startedAt', end: 'endedAt', cancel: 'cancelledAt' };
  const cases = Object.entries(allowed).flatMap(([state, next]) => ['start', 'end', 'lock', 'cancel'].map((transition) => ({ state, next, transition })));
  // Independent meetings: the cases run side by side.
  await Promise.all(cases.map(async ({ state, next, transition }) => {
    const id = await meetingIn(state);
    const response = await first.media('POST', `${T}/meetings/${id}/${transition}`, manager.key);
    if (next[transition]) {
      t.equal(response.status, 200, `${state} ${transition}`);
      t.equal(response.body.state, next[transition]);
      if (stamps[transition]) t.ok(Date.parse(response.body[stamps[transition]!]) > Date.now() - 60_000, `${stamps[transition]} set`);
    } else {
      expectError(t, response, 409, 'error.conflict');
      t.equal(response.body.value, state, `${state} ${transition}: 409 names the state`);
      t.equal((await first.media('GET', `${T}/meetings/${id}`, viewer.key)).body.state, state, 'unchanged');
    }
    t.equal((await first.media('DELETE', `${T}/meetings/${id}`, manager.key)).status, 204, 'a meeting is deleted in any state');
  }));

  const id = await meetingIn('PLANNED');
  const path = `${T}/meetings/${id}`;
  t.equal((await first.media('PATCH', path, manager.key, { body: { dateTime: '2031-05-01T10:00:00Z' } })).status, 200, 'PLANNED: the time moves');
  await first.media('POST', `${path}/start`, manager.key);
  expectError(t, await first.media('PATCH', path, manager.key, { body: { dateTime: '2031-05-02T10:00:00Z' } }), 409, 'error.conflict');
  t.equal((await first.media('PATCH', path, manager.key, { body: { agenda: 'live', protocol: 'draft', teamMemberIds: [plain.memberId] } })).status, 200, 'RUNNING: all but the time');
  await first.media('POST', `${path}/end`, manager.key);
  expectError(t, await first.media('PATCH', path, manager.key, { body: { title: 'late' } }), 409, 'error.conflict');
  expectError(t, await first.media('PATCH', path, manager.key, { body: { groupIds: [] } }), 409, 'error.conflict');
  t.match((await first.media('PATCH', path, manager.key, { body: { protocol: 'final' } })).body, { protocol: 'final', state: 'FINISHED' }, 'FINISHED: the protocol');
  await first.media('POST', `${path}/lock`, manager.key);
  const locked = await first.media('PATCH', path, manager.key, { body: { protocol: 'rewritten' } });
  expectError(t, locked, 409, 'error.conflict');
  t.equal(locked.body.value, 'LOCKED');
  t.equal((await first.media('GET', path, viewer.key)).body.protocol, 'final', 'the locked protocol is frozen');
  const cancelled = await meetingIn('CANCELLED');
  expectError(t, await first.media('PATCH', `${T}/meetings/${cancelled}`, manager.key, { body: { title: 'again' } }), 409, 'error.conflict');
});

t.test('two instances: racing transitions of one meeting are decided once', async (t) => {
  const races: [string, [string, string]][] = [['PLANNED', ['start', 'start']], ['PLANNED', ['start', 'cancel']], ['PLANNED', ['cancel', 'cancel']],
    ['RUNNING', ['end', 'end']], ['FINISHED', ['lock', 'lock']]];
  for (const [state, [one, two]] of races) {
    await Promise.all([0, 1, 2].map(async () => {
      const id = await meetingIn(state);
      const answers = await Promise.all([
        first.media('POST', `${T}/meetings/${id}/${one}`, manager.key),
        second.media('POST', `${T}/meetings/${id}/${two}`, manager.key),
      ]);
      t.same(answers.map((answer) => answer.status).sort(), [200, 409], `${state}: ${one} and ${two} at once`);
      const winner = answers.find((answer) => answer.status === 200)!;
      t.equal((await second.media('GET', `${T}/meetings/${id}`, viewer.key)).body.state, winner.body.state, 'the winner\'s state stands');
    }));
  }
});

t.test('two instances: a protocol change racing the lock lands before it or not at all', async (t) => {
  await Promise.all([0, 1, 2].map(async () => {
    const id = await meetingIn('FINISHED');
    const [lock, change] = await Promise.all([
      first.media('POST', `${T}/meetings/${id}/lock`, manager.key),
      second.media('PATCH', `${T}/meetings/${id}`, manager.key, { body: { protocol: 'late' } }),
    ]);
    t.equal(lock.status, 200);
    t.ok([200, 409].includes(change.status), `the change: ${change.status}`);
    const final = (await first.media('GET', `${T}/meetings/${id}`, viewer.key)).body;
    t.match(final, { state: 'LOCKED', protocol: change.status === 200 ? 'late' : null }, 'the locked protocol is what stood at the lock');
  }));
});

t.test('maxPlannedMeetings counts PLANNED meetings: 402 past it, exact across two instances', async (t) => {
  await sql('delete from meeting where team_id = $1', [team.teamId]);
  await setLimits({ maxPlannedMeetings: 2 });
  const a = await plan('A');
  await plan('B');
  const over = await plan('C');
  expectError(t, over, 402, 'error.teamLimits.maxPlannedMeetings');
  t.equal(over.body.value, 2);
  t.equal((await first.media('POST', `${T}/meetings/${a.body.id}/start`, manager.key)).status, 200, 'a started meeting is not planned');
  t.equal((await plan('C')).status, 201, 'so its place is free');
  expectError(t, await plan('D'), 402, 'error.teamLimits.maxPlannedMeetings');

  await sql('delete from meeting where team_id = $1', [team.teamId]);
  await setLimits({ maxPlannedMeetings: 3 });
  const racing = await Promise.all([1, 2, 3, 4, 5, 6].map((i) => plan(`Race ${i}`, {}, i % 2 ? first : second)));
  t.same(racing.map((answer) => answer.status).sort(), [201, 201, 201, 402, 402, 402], 'exactly the limit, whichever instance');
  t.equal((await first.media('GET', `${T}/meetings?state=PLANNED`, viewer.key)).body.count, 3);
  await setLimits({ maxPlannedMeetings: null });
});

t.test('meetingArchive: closed meetings stay readable that many months, enforced on every read', async (t) => {
  await sql('delete from meeting where team_id = $1', [team.teamId]);
  const finished = await meetingIn('FINISHED');
  const cancelled = await meetingIn('CANCELLED');
  const planned = await meetingIn('PLANNED');
  const titles = async () => (await first.media('GET', `${T}/meetings`, viewer.key)).body.data.map((meeting: any) => meeting.id).sort();
  t.same(await titles(), [finished, cancelled, planned].sort(), 'the default archive (1 month) keeps fresh ones');
  await sql(`update meeting set ended_at = now() - interval '40 days' where id = $1`, [finished]);
  await sql(`update meeting set cancelled_at = now() - interval '40 days' where id = $1`, [cancelled]);
  await sql(`update meeting set date_time = now() - interval '50 days' where id = $1`, [planned]);
  t.same(await titles(), [planned], 'older than a month: gone from the list; an open meeting never ages out');
  for (const id of [finished, cancelled]) {
    expectError(t, await first.media('GET', `${T}/meetings/${id}`, viewer.key), 404, 'error.notFound');
    expectError(t, await second.media('PATCH', `${T}/meetings/${id}`, manager.key, { body: { protocol: 'x' } }), 404, 'error.notFound');
    expectError(t, await second.media('DELETE', `${T}/meetings/${id}`, manager.key), 404, 'error.notFound');
  }
  expectError(t, await first.media('POST', `${T}/meetings/${finished}/lock`, manager.key), 404, 'error.notFound');
  await setLimits({ meetingArchive: 2 });
  t.same(await titles(), [finished, cancelled, planned].sort(), 'a longer archive shows them again (the rows stay)');
  t.equal((await second.media('POST', `${T}/meetings/${finished}/lock`, manager.key)).body.state, 'LOCKED');
  await setLimits({ meetingArchive: 0 });
  t.same(await titles(), [planned], '0: closed meetings are hidden at once');
  const closedNow = await first.media('POST', `${T}/meetings/${planned}/cancel`, manager.key);
  t.equal(closedNow.body.state, 'CANCELLED', 'the transition still answers the meeting it closed');
  t.same(await titles(), []);
  await setLimits({ meetingArchive: null });
  t.same(await titles(), [finished, cancelled, planned].sort(), 'null: for ever');
  await setLimits({ meetingArchive: 1 });
});

t.test('dashboard: the member\'s PLANNED and RUNNING meetings, soonest first', async (t) => {
  await sql('delete from meeting where team_id = $1', [team.teamId]);
  const everyone = (await plan('Everyone', { dateTime: '2031-02-01T10:00:00Z', meetingPoint: 'Hall' })).body;
  const mods = (await plan('Mods', { dateTime: '2031-01-15T10:00:00Z', groupIds: [group.id] })).body;
  const direct = (await plan('Direct', { dateTime: '2031-03-01T10:00:00Z', teamMemberIds: [moderator.memberId] })).body;
  await plan('Viewer only', { teamMemberIds: [viewer.memberId] });
  const running = (await plan('Running', { dateTime: '2030-12-01T10:00:00Z' })).body;
  await first.media('POST', `${T}/meetings/${running.id}/start`, manager.key);
  const cancelled = (await plan('Cancelled')).body;
  await first.media('POST', `${T}/meetings/${cancelled.id}/cancel`, manager.key);
  const dashboard = await second.media('GET', `${T}/dashboard`, moderator.key);
  t.equal(dashboard.status, 200);
  t.same(dashboard.body.meetings, [
    { id: running.id, title: 'Running', dateTime: '2030-12-01T10:00:00.000Z', state: 'RUNNING', meetingPoint: null },
    { id: mods.id, title: 'Mods', dateTime: '2031-01-15T10:00:00.000Z', state: 'PLANNED', meetingPoint: null },
    { id: everyone.id, title: 'Everyone', dateTime: '2031-02-01T10:00:00.000Z', state: 'PLANNED', meetingPoint: 'Hall' },
    { id: direct.id, title: 'Direct', dateTime: '2031-03-01T10:00:00.000Z', state: 'PLANNED', meetingPoint: null },
  ]);
  t.same((await first.media('GET', `${T}/dashboard`, plain.key)).body.meetings.map((meeting: any) => meeting.title), ['Running', 'Everyone'], 'no meeting meant for others');
});

t.test('logoffs: file one\'s own, see and delete one\'s own; managers see and delete all; logged', async (t) => {
  const meeting = (await plan('Absences')).body;
  const own = await first.media('POST', `${T}/logoffs`, plain.key, { body: { message: '  Holiday  ', begin: '2031-07-01T00:00:00Z', end: '2031-07-14T23:59:59Z' } });
  t.equal(own.status, 201);
  t.match(own.body, { teamId: team.teamId, teamMemberId: plain.memberId, message: 'Holiday', meetingId: null, begin: '2031-07-01T00:00:00.000Z', end: '2031-07-14T23:59:59.000Z', teamMember: { id: plain.memberId, name: 'plain' } });
  t.match((await teamLogRows(first, team.teamId)).at(-1), {
    action: 'LOGOFF_CREATED', team_member_id: plain.memberId, target_team_member_id: plain.memberId, target_identifier: own.body.id,
    data: { meetingId: null, begin: '2031-07-01T00:00:00.000Z', end: '2031-07-14T23:59:59.000Z' },
  });
  const forMeeting = await first.media('POST', `${T}/logoffs`, moderator.key, { body: { message: 'Exam', meetingId: meeting.id } });
  t.equal(forMeeting.status, 201);
  t.match(forMeeting.body, { teamMemberId: moderator.memberId, meetingId: meeting.id, begin: null, end: null });
  const byOwner = await first.media('POST', `${T}/logoffs`, team.key, { body: { message: 'Away', begin: '2031-07-01T00:00:00Z', end: '2031-07-02T00:00:00Z', meetingId: meeting.id } });
  t.match(byOwner.body, { teamMemberId: team.ownerId }, 'a key linked to no member files for the owner');

  const listOf = async (key: string, query = '') => (await first.media('GET', `${T}/logoffs${query}`, key)).body;
  t.same((await listOf(plain.key)).data.map((logoff: any) => logoff.id), [own.body.id], 'a member sees its own');
  t.same(await listOf(plain.key, `?teamMemberId=${moderator.memberId}`), { data: [], count: 0 }, 'and never another\'s');
  const all = await listOf(manager.key);
  t.same(all.data.map((logoff: any) => logoff.id), [byOwner.body.id, forMeeting.body.id, own.body.id], 'a manager sees all, newest first');
  t.equal(all.count, 3);
  t.same((await listOf(manager.key, `?meetingId=${meeting.id}`)).data.map((logoff: any) => logoff.id), [byOwner.body.id, forMeeting.body.id]);
  t.same((await listOf(manager.key, `?teamMemberId=${plain.memberId}`)).data.map((logoff: any) => logoff.id), [own.body.id]);
  expectError(t, await first.media('GET', `${T}/logoffs?teamMemberId=nope`, manager.key), 400, 'error.badRequest');
  t.equal((await first.media('GET', `${T}/logoffs/${own.body.id}`, plain.key)).status, 200);
  expectError(t, await first.media('GET', `${T}/logoffs/${forMeeting.body.id}`, plain.key), 404, 'error.notFound');
  expectError(t, await first.media('DELETE', `${T}/logoffs/${forMeeting.body.id}`, plain.key), 404, 'error.notFound');
  t.equal((await first.media('GET', `${T}/logoffs/${forMeeting.body.id}`, manager.key)).status, 200);

  t.equal((await first.media('DELETE', `${T}/logoffs/${forMeeting.body.id}`, manager.key)).status, 204, 'a manager deletes another\'s');
  t.match((await teamLogRows(first, team.teamId)).at(-1), { action: 'LOGOFF_DELETED', team_member_id: manager.memberId, target_team_member_id: moderator.memberId, target_identifier: forMeeting.body.id });
  t.equal((await first.media('DELETE', `${T}/logoffs/${own.body.id}`, plain.key)).status, 204, 'a member deletes its own');
  expectError(t, await first.media('DELETE', `${T}/logoffs/${own.body.id}`, plain.key), 404, 'error.notFound');
  t.equal((await first.media('DELETE', `${T}/meetings/${meeting.id}`, manager.key)).status, 204);
  t.match((await first.media('GET', `${T}/logoffs/${byOwner.body.id}`, team.key)).body, { meetingId: null, message: 'Away' }, 'a deleted meeting leaves its logoffs');
});

t.test('logoffs: bad ranges 400, overlaps and repeats 409, foreign meetings 404, nothing stored', async (t) => {
  const meeting = (await plan('Checked')).body;
  const closed = await meetingIn('FINISHED');
  const base = { message: 'x', begin: '2031-08-01T00:00:00Z', end: '2031-08-10T00:00:00Z' };
  t.equal((await first.media('POST', `${T}/logoffs`, viewer.key, { body: base })).status, 201);
  t.equal((await first.media('POST', `${T}/logoffs`, viewer.key, { body: { message: 'y', meetingId: meeting.id } })).status, 201);
  const before = await rows();
  const bad: [Record<string, unknown>, string][] = [
    [{ begin: base.begin, end: base.end }, 'error.missingArgument.message'],
    [{ ...base, message: '  ' }, 'error.badRequest'],
    [{ ...base, message: 'x'.repeat(2001) }, 'error.badRequest'],
    [{ message: 'x', begin: '2031-09-10T00:00:00Z', end: '2031-09-01T00:00:00Z' }, 'error.badRequest'],
    [{ message: 'x', begin: '2020-01-01T00:00:00Z', end: '2020-01-02T00:00:00Z' }, 'error.badRequest'],
    [{ message: 'x', begin: '2031-09-01T00:00:00Z' }, 'error.badRequest'],
    [{ message: 'x', end: '2031-09-01T00:00:00Z' }, 'error.badRequest'],
    [{ message: 'x' }, 'error.badRequest'],
    [{ message: 'x', begin: 'soon', end: '2031-09-01T00:00:00Z' }, 'error.badRequest'],
    [{ message: 'x', meetingId: 'nope' }, 'error.badRequest'],
    [{ ...base, teamMemberId: plain.memberId }, 'error.badRequest'],
  ];
  for (const [body, key] of bad) expectError(t, await first.media('POST', `${T}/logoffs`, viewer.key, { body }), 400, key);
  const past = await first.media('POST', `${T}/logoffs`, viewer.key, { body: { message: 'x', begin: '2020-01-01T00:00:00Z', end: '2020-01-02T00:00:00Z' } });
  t.equal(past.body.value, 'end', 'the past end is named');
  for (const range of [['2031-07-25T00:00:00Z', '2031-08-01T00:00:00Z'], ['2031-08-05T00:00:00Z', '2031-08-06T00:00:00Z'], ['2031-08-10T00:00:00Z', '2031-09-01T00:00:00Z'], ['2031-07-01T00:00:00Z', '2031-12-01T00:00:00Z']]) {
    expectError(t, await second.media('POST', `${T}/logoffs`, viewer.key, { body: { message: 'x', begin: range[0], end: range[1] } }), 409, 'error.conflict');
  }
  expectError(t, await first.media('POST', `${T}/logoffs`, viewer.key, { body: { message: 'again', meetingId: meeting.id } }), 409, 'error.conflict');
  const closedAnswer = await first.media('POST', `${T}/logoffs`, viewer.key, { body: { message: 'x', meetingId: closed } });
  expectError(t, closedAnswer, 409, 'error.conflict');
  t.equal(closedAnswer.body.value, 'FINISHED');
  for (const meetingId of [otherMeeting.id, missing]) {
    expectError(t, await first.media('POST', `${T}/logoffs`, viewer.key, { body: { message: 'x', meetingId } }), 404, 'error.notFound');
  }
  t.equal(await rows(), before, 'nothing stored');
  t.equal((await first.media('POST', `${T}/logoffs`, plain.key, { body: base })).status, 201, 'another member\'s range may overlap');
  t.equal((await first.media('POST', `${T}/logoffs`, viewer.key, { body: { ...base, begin: '2031-08-10T00:00:01Z', end: '2031-08-11T00:00:00Z' } })).status, 201, 'right after is fine');
});

t.test('two instances: overlapping logoffs of one member filed at once, one is stored', async (t) => {
  for (let round = 0; round < 3; round++) {
    const member = await memberWithKey(first, team.teamId, `racer_${round}`, []);
    const body = { message: 'x', begin: '2031-10-01T00:00:00Z', end: '2031-10-05T00:00:00Z' };
    const answers = await Promise.all([first, second].map((server) => server.media('POST', `${T}/logoffs`, member.key, { body })));
    t.same(answers.map((answer) => answer.status).sort(), [201, 409]);
  }
});

t.test('an archived team reads but changes nothing (403 error.team.archived)', async (t) => {
  const meeting = (await plan('Frozen')).body;
  const logoff = (await first.media('POST', `${T}/logoffs`, manager.key, { body: { message: 'x', meetingId: meeting.id } })).body;
  t.equal((await first.media('POST', `${T}/archive`, team.key)).status, 200);
  const before = await rows();
  const changes: [string, string, unknown][] = [
    ['POST', `${T}/meetings`, { title: 'x', dateTime: '2031-01-01T00:00:00Z' }], ['PATCH', `${T}/meetings/${meeting.id}`, { title: 'y' }],
    ['DELETE', `${T}/meetings/${meeting.id}`, undefined], ['POST', `${T}/meetings/${meeting.id}/start`, undefined], ['POST', `${T}/meetings/${meeting.id}/cancel`, undefined],
    ['POST', `${T}/logoffs`, { message: 'x', meetingId: meeting.id }], ['DELETE', `${T}/logoffs/${logoff.id}`, undefined],
  ];
  for (const [method, path, body] of changes) {
    expectError(t, await first.media(method, path, manager.key, body === undefined ? {} : { body }), 403, 'error.team.archived');
  }
  t.equal((await first.media('GET', `${T}/meetings/${meeting.id}`, manager.key)).status, 200);
  t.equal((await first.media('GET', `${T}/logoffs/${logoff.id}`, manager.key)).status, 200);
  t.equal(await rows(), before);
  t.equal((await first.media('POST', `${T}/unarchive`, team.key)).status, 200);
});
