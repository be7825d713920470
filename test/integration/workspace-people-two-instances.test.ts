import t from 'tap';
import { startTestServer } from '../helpers/server.ts';
import { memberWithKey } from '../helpers/team-admin.ts';

// Two instances of one deployment racing over the same worry box entry, access assignment and tag
// slug: the database decides each once (a conditional update, an upsert with a condition, a unique
// index), so one request wins and the other gets 409, whichever instance it reached.
const settings = { RATE_LIMIT_POINTS: 100_000 };
const first = await startTestServer(t, { settings });
const second = await startTestServer(t, { settings, databaseUrl: first.databaseUrl });
const team = await first.createTeam('TwoPeople');
const T = `/v1/teams/${team.teamId}`;
const group = (await first.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Answerers', permissions: [] })).body;
const author = await memberWithKey(first, team.teamId, 'author', []);
const answerers = [
  await memberWithKey(first, team.teamId, 'answerer_one', [], { groupIds: [group.id] }),
  await memberWithKey(first, team.teamId, 'answerer_two', [], { groupIds: [group.id] }),
];
const ROUNDS = 5;

t.test('an entry answered at once on both instances is answered once: one 200, one 409', async (t) => {
  for (let round = 0; round < ROUNDS; round++) {
    const entry = (await first.media('POST', `${T}/worry-box`, author.key, { body: { forGroupId: group.id, message: `worry ${round}`, isAnonymous: true } })).body;
    const answers = await Promise.all([first, second].map((server, i) =>
      server.media('POST', `${T}/worry-box/${entry.id}/answer`, answerers[i]!.key, { body: { answer: `answer ${i}` } })));
    t.same(answers.map((answer) => answer.status).sort(), [200, 409], `round ${round}`);
    const winner = answers.find((answer) => answer.status === 200)!.body;
    const stored = (await second.media('GET', `${T}/worry-box/${entry.id}`, answerers[0]!.key)).body;
    t.same([stored.answer, stored.handledByTeamMemberId], [winner.answer, winner.handledByTeamMemberId], 'the stored answer is the winner\'s');
  }
});

t.test('a member or group assigned the same access at once on both instances gets one assignment: one 201, one 409', async (t) => {
  for (let round = 0; round < ROUNDS; round++) {
    const access = (await first.media('POST', `${T}/accesses`, team.key, { body: { name: `access ${round}` } })).body;
    const direct = await Promise.all([first, second].map((server) =>
      server.media('POST', `${T}/accesses/${access.id}/assignments`, team.key, { body: { teamMemberId: author.memberId } })));
    t.same(direct.map((answer) => answer.status).sort(), [201, 409], `member, round ${round}`);
    const grouped = await Promise.all([first, second].map((server) =>
      server.media('POST', `${T}/accesses/${access.id}/group-assignments`, team.key, { body: { groupId: group.id } })));
    t.same(grouped.map((answer) => answer.status).sort(), [201, 409], `group, round ${round}`);
    t.match((await second.media('GET', `${T}/accesses`, team.key)).body.data.find((item: any) => item.id === access.id), { assignmentCount: 1, groupAssignmentCount: 1 });
  }
});

t.test('a tag slug created at once on both instances exists once: one 201, one 409', async (t) => {
  for (let round = 0; round < ROUNDS; round++) {
    const created = await Promise.all([first, second].map((server, i) =>
      server.media('POST', `${T}/team-tags`, team.key, { body: { name: i === 0 ? `Tag ${round}` : `tag-${round}` } })));
    t.same(created.map((answer) => answer.status).sort(), [201, 409], `round ${round}`);
  }
  t.equal((await first.media('GET', `${T}/team-tags`, team.key)).body.count, ROUNDS);
});
