import t from 'tap';
import { expectError, startTestServer } from '../helpers/server.ts';
import { memberWithKey } from '../helpers/team-admin.ts';

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
const team = await server.createTeam('Logs');
const base = `/v1/teams/${team.teamId}`;
const logs = (key: string, query = '', headers: Record<string, string> = {}) => server.media('GET', `${base}/logs${query}`, key, { headers });

const auditor = await memberWithKey(server, team.teamId, 'auditor', ['team.logs.view', 'team.settings.manage']);
await server.media('PATCH', base, auditor.key, { body: { name: 'Logs2' } });
await server.media('PATCH', base, team.key, { body: { locale: 'fr' } });

t.test('lists the log newest first with the member views', async (t) => {
  const response = await logs(auditor.key);
  t.equal(response.status, 200);
  t.equal(response.body.count, response.body.data.length);
  // createTeam: MEMBER_JOINED + API_KEY_CREATED; memberWithKey: MEMBER_JOINED + API_KEY_CREATED; two updates.
  t.same(response.body.data.map((entry: any) => entry.action).slice(0, 2), ['TEAM_UPDATED', 'TEAM_UPDATED']);
  t.equal(response.body.count, 6);
  const [byOwnerKey, byAuditor] = response.body.data;
  // A key linked to no member acts as the owner, and the log names the owner (spec 2.19: teamMember is required).
  t.match(byOwnerKey, { teamId: team.teamId, system: 'APP', teamMemberId: team.ownerId, teamMember: { id: team.ownerId, name: 'Owner' }, data: { locale: 'fr' } });
  t.match(byAuditor, { teamMemberId: auditor.memberId, teamMember: { id: auditor.memberId, name: 'auditor', userId: String, image: null, joinedTeamAt: String }, data: { name: 'Logs2' } });
  const joined = response.body.data.find((entry: any) => entry.action === 'MEMBER_JOINED' && entry.targetTeamMemberId === auditor.memberId);
  t.match(joined, { targetTeamMember: { id: auditor.memberId, name: 'auditor' } });
  const times = response.body.data.map((entry: any) => Date.parse(entry.createdAt));
  t.same(times, [...times].sort((a, b) => b - a), 'newest first');
});

t.test('filters: action, system, acting member, target member, time range; paging headers', async (t) => {
  t.equal((await logs(auditor.key, '?action=TEAM_UPDATED')).body.count, 2);
  t.equal((await logs(auditor.key, '?action=MEMBER_KICKED')).body.count, 0);
  t.equal((await logs(auditor.key, '?system=GAMEPANEL')).body.count, 0);
  t.equal((await logs(auditor.key, '?system=APP')).body.count, 6);
  const byActor = await logs(auditor.key, `?teamMemberId=${auditor.memberId}`);
  // The operator route records a new member as joining by itself.
  t.same(byActor.body.data.map((entry: any) => entry.action), ['TEAM_UPDATED', 'MEMBER_JOINED']);
  const byTarget = await logs(auditor.key, `?targetTeamMemberId=${auditor.memberId}`);
  t.same(byTarget.body.data.map((entry: any) => entry.action), ['API_KEY_CREATED', 'MEMBER_JOINED']);
  const all = (await logs(auditor.key)).body.data;
  const newest = all[0].createdAt;
  t.equal((await logs(auditor.key, `?from=${encodeURIComponent(newest)}`)).body.count, 1, 'from is inclusive');
  t.equal((await logs(auditor.key, `?to=${encodeURIComponent(new Date(Date.parse(all.at(-1).createdAt) - 1).toISOString())}`)).body.count, 0);
  const page2 = await logs(auditor.key, '', { pageNumber: '2', pageSize: '4' });
  t.equal(page2.body.count, 6);
  t.same(page2.body.data.map((entry: any) => entry.id), all.slice(4).map((entry: any) => entry.id));
});

t.test('bad filters and paging: 400', async (t) => {
  for (const query of ['?action=lower', '?system=WEB', '?teamMemberId=nope', '?targetTeamMemberId=1', '?from=yesterday', '?to=2026-13-01T00:00:00Z',
    '?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z', '?colour=red']) {
    expectError(t, await logs(auditor.key, query), 400, 'error.badRequest');
  }
  expectError(t, await logs(auditor.key, '', { pageSize: '0' }), 400, 'error.badRequest');
  expectError(t, await logs(auditor.key, '', { pageNumber: 'x' }), 400, 'error.badRequest');
});

t.test('needs team.logs.view', async (t) => {
  const other = await memberWithKey(server, team.teamId, 'noLogs', ['team.settings.manage']);
  expectError(t, await logs(other.key), 403, 'error.forbidden');
});
