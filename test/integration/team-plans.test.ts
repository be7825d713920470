import t from 'tap';
import { defaultPlanLimits } from '../../src/domain/plans/plan-limits.ts';
import { expectError, startTestServer } from '../helpers/server.ts';
import { memberWithKey } from '../helpers/team-admin.ts';

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
const team = await server.createTeam('Plans');

t.test('GET /v1/plans lists the public plans with limits and prices, no key needed', async (t) => {
  const response = await server.request('GET', '/v1/plans');
  t.equal(response.status, 200);
  t.same(response.body.map((plan: any) => plan.slug), ['free', 'enterprise']);
  t.same(response.body[0].limits, defaultPlanLimits);
  t.match(response.body[0], { name: 'Free', isDefault: true, isPublic: true, monthlyPrice: Number, yearlyPrice: Number });
});

t.test('GET /v1/teams/{teamId}/plan: the plan, the overrides and the effective limits', async (t) => {
  const reader = await memberWithKey(server, team.teamId, 'reader', []);
  const before = await server.media('GET', `/v1/teams/${team.teamId}/plan`, reader.key);
  t.equal(before.status, 200);
  t.equal(before.body.plan.slug, 'free');
  t.same(before.body.overrides, {});
  t.same(before.body.limits, defaultPlanLimits);
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxMembers: null, maxGroups: 3 });
  const after = await server.media('GET', `/v1/teams/${team.teamId}/plan`, reader.key);
  t.same(after.body.overrides, { maxMembers: null, maxGroups: 3 });
  t.same(after.body.limits, { ...defaultPlanLimits, maxMembers: null, maxGroups: 3 });

  const other = await server.createTeam('Other');
  expectError(t, await server.media('GET', `/v1/teams/${team.teamId}/plan`, other.key), 401, 'error.unauthorized');
  const uploader = await memberWithKey(server, team.teamId, 'uploader', ['team.media.upload'], { scopes: ['media:upload'] });
  expectError(t, await server.media('GET', `/v1/teams/${team.teamId}/plan`, uploader.key), 403, 'error.forbidden');
});
