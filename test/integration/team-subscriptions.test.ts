import t from 'tap';
import { randomUUID } from 'node:crypto';
import { connectPg } from '../helpers/database.ts';
import { expectError, startTestServer, type CreatedTeam } from '../helpers/server.ts';
import { driverSettings } from '../helpers/storage.ts';
import { memberWithKey, tableSnapshot, teamLogRows } from '../helpers/team-admin.ts';
import { pngLike, uploadJson } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';

// Plans and subscriptions as data (spec 2.12, 2.14): the operator sets them, the team reads them,
// the subscription job applies their ends once across instances.
const settings = { ...driverSettings('fs'), RATE_LIMIT_POINTS: 100_000 };
const first = await startTestServer(t, { settings });
const second = await startTestServer(t, { settings, databaseUrl: first.databaseUrl, dataDir: first.dataDir });
// Runs below name their own minute; the timers would claim the real one.
await first.app.services.subscriptionJob.stop();
await second.app.services.subscriptionJob.stop();
const db = await connectPg(first.databaseUrl);
t.teardown(() => db.end());
const HOUR = 3_600_000;

async function planId(slug: string): Promise<string> {
  return (await db.query<{ id: string }>('select id from plan where slug = $1', [slug])).rows[0]!.id;
}
const teamPlan = async (team: CreatedTeam) => (await first.media('GET', `/v1/teams/${team.teamId}/plan`, team.key)).body;
const setSubscription = (team: CreatedTeam, body: unknown) => first.admin('PUT', `/v1/admin/teams/${team.teamId}/subscription`, body);
const subscriptionRows = (team: CreatedTeam) => tableSnapshot(first, 'select * from subscription where team_id = $1 order by type', [team.teamId]);
const lastLog = async (team: CreatedTeam) => (await teamLogRows(first, team.teamId)).at(-1)!;
/** The newest log entries whose data has `key` (entries of one transaction share their time, so their order is not fixed). */
const logsWith = async (team: CreatedTeam, key: string) => (await teamLogRows(first, team.teamId)).filter((row) => row.data && key in row.data);

t.test('a team reads its plan, effective limits and subscriptions; no subscription at first', async (t) => {
  const team = await first.createTeam('Reads');
  const reader = await memberWithKey(first, team.teamId, 'reader', []);
  const plan = await first.media('GET', `/v1/teams/${team.teamId}/plan`, reader.key);
  t.equal(plan.status, 200);
  t.match(plan.body, { plan: { slug: 'free' }, overrides: {}, subscription: null });
  t.same((await first.media('GET', `/v1/teams/${team.teamId}/subscriptions`, reader.key)).body, []);
  const other = await first.createTeam('Stranger');
  const uploader = await memberWithKey(first, team.teamId, 'uploader', ['team.media.upload'], { scopes: ['media:upload'] });
  for (const path of ['/plan', '/subscriptions']) {
    expectError(t, await first.media('GET', `/v1/teams/${team.teamId}${path}`, other.key), 401, 'error.unauthorized');
    expectError(t, await first.media('GET', `/v1/teams/${team.teamId}${path}`, uploader.key), 403, 'error.forbidden');
  }
});

t.test('PUT /v1/admin/teams/{teamId}/plan moves the team (TEAM_UPDATED) and reaches every instance\'s limits at once', async (t) => {
  const team = await first.createTeam('Mover');
  // A plan whose file size limit a small upload passes, and one it does not.
  await db.query(`insert into plan (id, created_at, updated_at, name, slug, limits) select $1, now(), now(), 'Tiny', 'tiny', limits || '{"maxMediaFileSize": 1000}'::jsonb from plan where slug = 'free'`, [randomUUID()]);
  t.equal((await uploadJson(second, team.teamId, team.key, { file: pngLike(2000).toString('base64'), fileName: 'warm.png' })).status, 201);
  t.ok(second.app.services.teamStates.has(team.teamId), 'the second instance caches the team');

  const moved = await first.admin('PUT', `/v1/admin/teams/${team.teamId}/plan`, { plan: 'tiny' });
  t.equal(moved.status, 200);
  t.match(moved.body, { plan: { slug: 'tiny' }, limits: { maxMediaFileSize: 1000 }, subscription: null });
  t.match(await lastLog(team), { action: 'TEAM_UPDATED', team_member_id: null, data: { plan: { from: await planId('free'), to: await planId('tiny'), slug: 'tiny' } } });
  t.ok(await eventually(() => !second.app.services.teamStates.has(team.teamId)), 'dropped from the other instance');
  expectError(t, await uploadJson(second, team.teamId, team.key, { file: pngLike(2000).toString('base64'), fileName: 'big.png' }), 402, 'error.teamLimits.maxMediaFileSize');
  t.equal((await first.media('GET', `/v1/teams/${team.teamId}`, team.key)).body.planId, await planId('tiny'));

  const logs = (await teamLogRows(first, team.teamId)).length;
  const before = await tableSnapshot(first, 'select plan_id from team where id = $1', [team.teamId]);
  expectError(t, await first.admin('PUT', `/v1/admin/teams/${team.teamId}/plan`, { plan: 'platinum' }), 400, 'error.badRequest');
  expectError(t, await first.admin('PUT', `/v1/admin/teams/${team.teamId}/plan`, {}), 400, 'error.missingArgument.plan');
  expectError(t, await first.admin('PUT', `/v1/admin/teams/${team.teamId}/plan`, { plan: 'free', extra: 1 }), 400, 'error.badRequest');
  expectError(t, await first.admin('PUT', `/v1/admin/teams/${randomUUID()}/plan`, { plan: 'free' }), 404, 'error.notFound');
  expectError(t, await first.request('PUT', `/v1/admin/teams/${team.teamId}/plan`, { body: { plan: 'free' } }), 401, 'error.unauthorized');
  expectError(t, await first.request('PUT', `/v1/admin/teams/${team.teamId}/plan`, { body: { plan: 'free' }, headers: { authSecret: 'wrong' } }), 401, 'error.unauthorized');
  t.equal(await tableSnapshot(first, 'select plan_id from team where id = $1', [team.teamId]), before, 'nothing changed');
  t.equal((await teamLogRows(first, team.teamId)).length, logs, 'nothing logged');
});

t.test('PUT /v1/admin/teams/{teamId}/subscription: shape, the plan follows, validation changes nothing', async (t) => {
  const team = await first.createTeam('Subscriber');
  const trialEndsAt = new Date(Date.now() + 14 * 24 * HOUR).toISOString();
  const set = await setSubscription(team, { plan: 'enterprise', isTrialing: true, trialEndsAt, billingCycle: 'YEARLY', priceId: 'price_123' });
  t.equal(set.status, 200);
  t.match(set.body, {
    id: String, subscriptionId: /^manual_/, priceId: 'price_123', userId: String, checkedAt: String, createdAt: String, updatedAt: String,
    lastPaymentFailed: false, type: 'TEAM', billingCycle: 'YEARLY', nextPaymentAt: null, endsAt: null, canceledAt: null,
    pendingPriceId: null, pendingBillingCycle: null, stripeScheduleId: null, teamId: team.teamId, planId: await planId('enterprise'),
    isTrialing: true, trialEndsAt,
  });
  const owner = (await first.media('GET', `/v1/teams/${team.teamId}/members/${team.ownerId}`, team.key)).body;
  t.equal(set.body.userId, owner.userId, 'the owner pays by default');
  const plan = await teamPlan(team);
  t.equal(plan.plan.slug, 'enterprise', 'the team is on the subscribed plan');
  t.same(plan.subscription, set.body);
  t.same((await first.media('GET', `/v1/teams/${team.teamId}/subscriptions`, team.key)).body, [set.body]);
  t.match(await logsWith(team, 'subscription'), [{ action: 'TEAM_UPDATED', team_member_id: null, data: { subscription: { type: 'TEAM', isTrialing: true } } }]);
  t.match(await logsWith(team, 'plan'), [{ action: 'TEAM_UPDATED', team_member_id: null, data: { plan: { to: await planId('enterprise') } } }]);

  const voice = await setSubscription(team, { type: 'VOICE', plan: 'free' });
  t.equal(voice.status, 200);
  t.equal((await teamPlan(team)).plan.slug, 'enterprise', 'a VOICE subscription does not move the team');
  t.same((await first.media('GET', `/v1/teams/${team.teamId}/subscriptions`, team.key)).body.map((s: any) => s.type), ['TEAM', 'VOICE']);

  const before = await subscriptionRows(team);
  const count = (await teamLogRows(first, team.teamId)).length;
  for (const [body, value] of [
    [{ isTrialing: true }, 'trialEndsAt'],
    [{ trialEndsAt }, 'trialEndsAt'],
    [{ endsAt: trialEndsAt }, 'endsAt'],
    [{ canceledAt: trialEndsAt, endsAt: new Date().toISOString() }, 'endsAt'],
    [{ type: 'GOLD' }, 'type'],
    [{ billingCycle: 'WEEKLY' }, 'billingCycle'],
    [{ nextPaymentAt: 'soon' }, 'nextPaymentAt'],
    [{ userId: 'x' }, 'userId'],
    [{ plan: 'platinum' }, 'platinum'],
    [{ extra: true }, 'extra'],
  ] as const) {
    const refused = await setSubscription(team, body);
    expectError(t, refused, 400, 'error.badRequest');
    t.equal(refused.body.value, value, JSON.stringify(body));
  }
  expectError(t, await setSubscription(team, { userId: randomUUID() }), 404, 'error.notFound');
  expectError(t, await first.admin('PUT', `/v1/admin/teams/${randomUUID()}/subscription`, {}), 404, 'error.notFound');
  expectError(t, await first.request('PUT', `/v1/admin/teams/${team.teamId}/subscription`, { body: {} }), 401, 'error.unauthorized');
  t.equal(await subscriptionRows(team), before, 'nothing changed');
  t.equal((await teamLogRows(first, team.teamId)).length, count, 'nothing logged');
});

t.test('the job: a trial without a next payment ends at trialEndsAt and the team falls back to the default plan', async (t) => {
  const [enterprise, free] = [await planId('enterprise'), await planId('free')];
  const team = await first.createTeam('Trialist');
  const trialEndsAt = new Date(Date.now() + 48 * HOUR);
  await setSubscription(team, { plan: 'enterprise', isTrialing: true, trialEndsAt: trialEndsAt.toISOString() });
  const early = await first.app.services.subscriptionJob.runOnce(new Date(trialEndsAt.getTime() - 60_000));
  t.match(early, { ran: true, ended: 0 });
  t.equal((await teamPlan(team)).plan.slug, 'enterprise', 'not before trialEndsAt');

  const due = await first.app.services.subscriptionJob.runOnce(new Date(trialEndsAt.getTime() + 60_000));
  t.match(due, { ran: true });
  t.ok(due.ended >= 1);
  const plan = await teamPlan(team);
  t.equal(plan.plan.slug, 'free');
  t.match(plan.subscription, { isTrialing: false, planId: await planId('enterprise') }, 'the subscription stays readable');
  const ended = await logsWith(team, 'subscriptionEnded');
  t.equal(ended.length, 2);
  t.ok(ended.some((row) => row.action === 'TEAM_UPDATED' && row.team_member_id === null && row.data.subscriptionEnded.type === 'TEAM' && row.data.subscriptionEnded.reason === 'trialEnded'));
  t.ok(ended.some((row) => row.data.subscriptionEnded === 'trialEnded' && row.data.plan.from === enterprise && row.data.plan.to === free));

  // Applied once: a later run finds nothing more, even after the operator moves the team again.
  await first.admin('PUT', `/v1/admin/teams/${team.teamId}/plan`, { plan: 'enterprise' });
  await first.app.services.subscriptionJob.runOnce(new Date(trialEndsAt.getTime() + 5 * 60_000));
  t.equal((await teamPlan(team)).plan.slug, 'enterprise');
});

t.test('the job: a trial with a next payment goes on as a paid subscription', async (t) => {
  const team = await first.createTeam('Converter');
  const trialEndsAt = new Date(Date.now() + 72 * HOUR);
  await setSubscription(team, {
    plan: 'enterprise', isTrialing: true, trialEndsAt: trialEndsAt.toISOString(), nextPaymentAt: new Date(trialEndsAt.getTime() + 30 * 24 * HOUR).toISOString(),
  });
  const result = await first.app.services.subscriptionJob.runOnce(new Date(trialEndsAt.getTime() + 60_000));
  t.ok(result.converted >= 1);
  const plan = await teamPlan(team);
  t.equal(plan.plan.slug, 'enterprise');
  t.equal(plan.subscription.isTrialing, false);
  t.match(await lastLog(team), { action: 'TEAM_UPDATED', data: { subscription: { type: 'TEAM', trialEnded: true } } });
});

t.test('the job: a canceled subscription ends at endsAt, once across instances', async (t) => {
  const team = await first.createTeam('Canceler');
  const endsAt = new Date(Date.now() + 96 * HOUR);
  await setSubscription(team, { plan: 'enterprise', canceledAt: new Date().toISOString(), endsAt: endsAt.toISOString(), nextPaymentAt: null });
  t.match(await first.app.services.subscriptionJob.runOnce(new Date(endsAt.getTime() - 60_000)), { ran: true, ended: 0 });
  t.equal((await teamPlan(team)).plan.slug, 'enterprise', 'canceled, but running until endsAt');

  const at = new Date(endsAt.getTime() + 2 * 60_000);
  const results = await Promise.all([first.app.services.subscriptionJob.runOnce(at), second.app.services.subscriptionJob.runOnce(at)]);
  t.same(results.map((result) => result.ran).sort(), [false, true], 'one instance runs the minute');
  t.same(await first.app.services.subscriptionJob.runOnce(at), { ran: false, ended: 0, converted: 0 }, 'the minute is taken');
  t.equal((await teamPlan(team)).plan.slug, 'free');
  t.equal((await teamLogRows(first, team.teamId)).filter((row) => row.data?.subscriptionEnded).length, 2, 'ended once (one entry for the end, one for the plan)');

  // A VOICE subscription ends too, but does not move the team.
  await first.admin('PUT', `/v1/admin/teams/${team.teamId}/plan`, { plan: 'enterprise' });
  await setSubscription(team, { type: 'VOICE', canceledAt: new Date().toISOString() });
  await first.app.services.subscriptionJob.runOnce(new Date(Date.now() + 120 * HOUR));
  t.equal((await teamPlan(team)).plan.slug, 'enterprise');
  t.ok((await logsWith(team, 'subscriptionEnded')).some((row) => row.data.subscriptionEnded.type === 'VOICE' && row.data.subscriptionEnded.reason === 'canceled'));
});

t.test('GET /me: the caller\'s member, the team with its plan, the subscription and the trial offer', async (t) => {
  const team = await first.createTeam('Myself');
  const group = (await first.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Crew', permissions: ['team.media.view'] })).body;
  const member = await memberWithKey(first, team.teamId, 'myself', [], { groupIds: [group.id] });
  const me = await first.media('GET', `/v1/teams/${team.teamId}/me`, member.key);
  t.equal(me.status, 200);
  t.match(me.body, {
    member: { id: member.memberId, name: 'myself', isTeamOwner: false, groups: [{ id: group.id, name: 'Crew' }], user: { username: String } },
    team: { id: team.teamId, name: 'Myself', archived: false, planId: await planId('free'), plan: { slug: 'free', limits: Object } },
    subscription: null,
    trialEligible: true,
    trialDays: 14,
  });
  const asOwner = await first.media('GET', `/v1/teams/${team.teamId}/me`, team.key);
  t.match(asOwner.body.member, { id: team.ownerId, isTeamOwner: true }, 'a key linked to no member sees the owner');

  const subscription = (await setSubscription(team, { plan: 'enterprise', isTrialing: true, trialEndsAt: new Date(Date.now() + 14 * 24 * HOUR).toISOString() })).body;
  const after = (await first.media('GET', `/v1/teams/${team.teamId}/me`, member.key)).body;
  t.same(after.subscription, subscription);
  t.equal(after.trialEligible, false, 'a team has its trial once');
  t.equal(after.team.plan.slug, 'enterprise');

  const other = await first.createTeam('NotMine');
  expectError(t, await first.media('GET', `/v1/teams/${team.teamId}/me`, other.key), 401, 'error.unauthorized');
  const uploader = await memberWithKey(first, team.teamId, 'uploader', ['team.media.upload'], { scopes: ['media:upload'] });
  expectError(t, await first.media('GET', `/v1/teams/${team.teamId}/me`, uploader.key), 403, 'error.forbidden');
});

t.test('every enforced limit follows the team\'s plan: after a move to a smaller plan each guarded path is 402 and nothing is removed', async (t) => {
  await db.query(`insert into plan (id, created_at, updated_at, name, slug, limits) select $1, now(), now(), 'Small', 'small',
    limits || '{"maxMembers": 2, "maxGroups": 1, "maxMemberNotes": 0, "maxAutomations": 0, "multiUseInvites": false, "maxMediaFileSize": 1000}'::jsonb
    from plan where slug = 'enterprise'`, [randomUUID()]);
  const team = await first.createTeam('Shrinking', 'enterprise');
  const group = (await first.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Only', permissions: [] })).body;
  const extra = await memberWithKey(first, team.teamId, 'extra', []);
  const invite = (await first.media('POST', `/v1/teams/${team.teamId}/invites`, team.key, { body: { groupId: group.id } })).body;
  const userId = (await first.admin('POST', `/v1/admin/teams/${(await first.createTeam('Users')).teamId}/members`, { name: 'outsider', permissions: [] })).body.userId;
  t.equal((await first.admin('PUT', `/v1/admin/teams/${team.teamId}/plan`, { plan: 'small' })).status, 200);
  const rows = () => Promise.all(['team_member', 'team_group', 'team_member_note', 'automation', 'team_invite', 'media_file']
    .map((table) => tableSnapshot(first, `select count(*)::int as n from ${table} where team_id = $1`, [team.teamId]))).then((all) => all.join());
  const before = await rows();
  const T = `/v1/teams/${team.teamId}`;
  expectError(t, await first.admin('POST', `/v1/admin/teams/${team.teamId}/members`, { name: 'third', permissions: [] }), 402, 'error.teamLimits.maxMembers');
  expectError(t, await first.admin('POST', `/v1/admin/invites/${invite.id}/accept`, { userId }), 402, 'error.teamLimits.maxMembers');
  expectError(t, await first.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Second', permissions: [] }), 402, 'error.teamLimits.maxGroups');
  expectError(t, await first.media('POST', `${T}/groups`, team.key, { body: { name: 'Second', permissions: [] } }), 402, 'error.teamLimits.maxGroups');
  expectError(t, await first.media('POST', `${T}/members/${extra.memberId}/notes`, team.key, { body: { note: 'n' } }), 402, 'error.teamLimits.maxMemberNotes');
  expectError(t, await first.media('POST', `${T}/automations`, team.key, { body: { name: 'hook', url: 'https://hooks.example.com/x' } }), 402, 'error.teamLimits.maxAutomations');
  expectError(t, await first.media('POST', `${T}/invites`, team.key, { body: { groupId: group.id, isMultiUse: true } }), 402, 'error.teamLimits.multiUseInvites');
  expectError(t, await uploadJson(first, team.teamId, team.key, { file: pngLike(2000).toString('base64'), fileName: 'big.png' }), 402, 'error.teamLimits.maxMediaFileSize');
  t.equal(await rows(), before, 'nothing added, nothing removed: members over a new limit stay');
  t.equal((await first.media('GET', `${T}/members`, team.key)).body.count, 2);
});
