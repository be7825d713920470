import t, { type Test } from 'tap';
import { connectPg } from '../helpers/database.ts';
import { startTestServer, type CreatedTeam, type TestServer } from '../helpers/server.ts';
import { driverSettings } from '../helpers/storage.ts';
import { KiB, MiB, pngLike, teamStorageState, uploadJson, uploadMultipart } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';

// Team limits come from a per-instance cache (issue 18.4): a change is seen at once by the next
// upload on every instance, whether or not the change's notification has arrived yet.

const settings = { ...driverSettings('fs'), RATE_LIMIT_POINTS: 100_000 };
const first = await startTestServer(t, { settings });
const second = await startTestServer(t, { settings, databaseUrl: first.databaseUrl, dataDir: first.dataDir });
const db = await connectPg(first.databaseUrl);
t.teardown(() => db.end());

function upload(server: TestServer, team: CreatedTeam, size: number, name = 'limit.png') {
  return uploadJson(server, team.teamId, team.key, { file: pngLike(size).toString('base64'), fileName: name });
}

async function setLimits(team: CreatedTeam, limits: Record<string, number | null>) {
  const response = await first.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, limits);
  if (response.status !== 200) throw new Error(JSON.stringify(response.body));
}

/** Changes the overrides without the trigger's notification: every instance's cache is then stale. */
async function setLimitsSilently(team: CreatedTeam, limits: Record<string, number | null>) {
  await db.query('begin');
  await db.query('set local session_replication_role = replica');
  // A team created through the API may hold the JSON string "{}" rather than an object.
  await db.query(
    `update team set limit_overrides = (case when jsonb_typeof(limit_overrides) = 'object' then limit_overrides else '{}' end) || $2::jsonb where id = $1`,
    [team.teamId, JSON.stringify(limits)],
  );
  await db.query('commit');
}

async function cachedOnBoth(t: Test, team: CreatedTeam) {
  for (const server of [first, second]) {
    t.equal((await upload(server, team, 100, 'warm.png')).status, 201);
    t.ok(server.app.services.teamStates.has(team.teamId), 'the team is cached');
  }
}

t.test('a change through the operator route drops the team from every instance at once', async (t) => {
  const team = await first.createTeam('LimitsNotify', 'enterprise');
  await cachedOnBoth(t, team);
  await setLimits(team, { maxMediaFileSize: 5000 });
  t.ok(await eventually(() => !first.app.services.teamStates.has(team.teamId) && !second.app.services.teamStates.has(team.teamId)));
  const refused = await upload(second, team, 6000);
  t.equal(refused.status, 402);
  t.equal(refused.body.messageKey, 'error.teamLimits.maxMediaFileSize');
  t.equal(refused.body.value, 5000);
});

t.test("a plan's limits changed in SQL drop every team of every instance", async (t) => {
  const team = await first.createTeam('PlanChange', 'enterprise');
  await cachedOnBoth(t, team);
  const plan = await db.query<{ limits: Record<string, unknown> }>(`select limits from plan where slug = 'enterprise'`);
  await db.query(`update plan set limits = limits || '{"maxMediaFileSize": 4000}'::jsonb where slug = 'enterprise'`);
  t.teardown(() => db.query(`update plan set limits = $1::jsonb where slug = 'enterprise'`, [JSON.stringify(plan.rows[0]!.limits)]));
  t.ok(await eventually(() => !first.app.services.teamStates.has(team.teamId) && !second.app.services.teamStates.has(team.teamId)));
  t.equal((await upload(first, team, 4500)).status, 402);
  t.equal((await upload(second, team, 3500)).status, 201);
});

t.test('a lowered file size limit refuses the next upload on every instance, even before the notification', async (t) => {
  const team = await first.createTeam('LowerFile', 'enterprise');
  await cachedOnBoth(t, team);
  const before = await teamStorageState(first.databaseUrl, team.teamId);
  await setLimitsSilently(team, { maxMediaFileSize: 3000 });
  t.ok(second.app.services.teamStates.has(team.teamId), 'the cache still holds the old limits');
  for (const server of [first, second]) {
    const refused = await upload(server, team, 4000);
    t.equal(refused.status, 402, 'the commit checks the limit in the database');
    t.equal(refused.body.messageKey, 'error.teamLimits.maxMediaFileSize');
    t.equal(refused.body.value, 3000);
  }
  const after = await teamStorageState(first.databaseUrl, team.teamId);
  t.same(after, before, 'nothing stored or counted');
});

t.test('a raised file size limit admits the next upload on every instance, even before the notification', async (t) => {
  const team = await first.createTeam('RaiseFile', 'enterprise');
  // Silently, before the team is cached: a notification still on its way would drop the team from a cache
  // after cachedOnBoth filled it (seen on a loaded machine).
  await setLimitsSilently(team, { maxMediaFileSize: 3000 });
  await cachedOnBoth(t, team);
  t.equal((await upload(second, team, 9000)).status, 402);
  await setLimitsSilently(team, { maxMediaFileSize: 20_000 });
  for (const server of [first, second]) {
    t.ok(server.app.services.teamStates.has(team.teamId), 'the cache still holds the old limits');
    t.equal((await upload(server, team, 9000)).status, 201, 'a cached refusal is checked against the database first');
    const multipart = await uploadMultipart(server, team.teamId, team.key, { content: pngLike(12_000), fileName: 'm.png' });
    t.equal(multipart.status, 201);
  }
});

t.test('a lowered or raised storage limit is exact for the next upload on every instance', async (t) => {
  const team = await first.createTeam('StorageLimit', 'enterprise');
  await cachedOnBoth(t, team);
  const state = await teamStorageState(first.databaseUrl, team.teamId);
  const file = (name: string) => ({ content: pngLike(200 * KiB), fileName: name });
  const send = (server: TestServer, name: string) => uploadMultipart(server, team.teamId, team.key, file(name));
  // Room for exactly one more 200 KiB file; large enough that a cache saying "full" refuses it from its headers.
  const limitKiB = Math.ceil(state.usedStorage / KiB) + 200;
  await setLimitsSilently(team, { maxTeamStorage: limitKiB });
  t.equal((await send(second, 'fits.png')).status, 201);
  const full = await send(first, 'full.png');
  t.equal(full.status, 402, 'the commit checks the storage limit in the database');
  t.equal(full.body.messageKey, 'error.teamLimits.maxTeamStorage');
  // A limit through the route (a change that equals the old value notifies nothing): every cache
  // learns it, and then says the team is full.
  await setLimits(team, { maxTeamStorage: limitKiB - 1 });
  t.ok(await eventually(() => !first.app.services.teamStates.has(team.teamId) && !second.app.services.teamStates.has(team.teamId)));
  t.equal((await send(first, 'full-again.png')).status, 402);
  await setLimitsSilently(team, { maxTeamStorage: limitKiB + 200 });
  t.ok(first.app.services.teamStates.has(team.teamId), 'the cache still says the team is full');
  t.equal((await send(first, 'room.png')).status, 201, 'a cached refusal is checked against the database first');
  const after = await teamStorageState(first.databaseUrl, team.teamId);
  t.equal(after.usedStorage, after.sumOfSizes);
  t.equal(after.usedStorage, state.usedStorage + 2 * 200 * KiB);
});

t.test('a large body of known length is judged on the cache; a team filled meanwhile refuses it by its reservation, leaving nothing', async (t) => {
  const team = await first.createTeam('LargeCached', 'enterprise');
  await cachedOnBoth(t, team);
  const before = await teamStorageState(first.databaseUrl, team.teamId);
  const file = (name: string) => ({ content: pngLike(6 * MiB), fileName: name });
  // Room for 1 MiB more, and no instance has heard it: the cached state still has room for 6 MiB.
  await setLimitsSilently(team, { maxTeamStorage: Math.ceil(before.usedStorage / KiB) + 1024 });
  for (const server of [first, second]) {
    t.ok(server.app.services.teamStates.has(team.teamId), 'the cache still holds the old limits');
    const refused = await uploadMultipart(server, team.teamId, team.key, file('large.png'));
    t.equal(refused.status, 402, 'the reservation checks the storage limit in the database');
    t.equal(refused.body.messageKey, 'error.teamLimits.maxTeamStorage');
  }
  t.same(await teamStorageState(first.databaseUrl, team.teamId), before, 'nothing stored, counted or reserved');
  await setLimitsSilently(team, { maxTeamStorage: Math.ceil(before.usedStorage / KiB) + 8 * 1024 });
  const states = second.app.services.teamStates;
  const fresh = states.fresh.bind(states);
  let freshReads = 0;
  states.fresh = (teamId) => {
    freshReads++;
    return fresh(teamId);
  };
  t.teardown(() => {
    states.fresh = fresh;
  });
  t.equal((await uploadMultipart(second, team.teamId, team.key, file('fits.png'))).status, 201, 'one that fits lands');
  t.equal(freshReads, 0, 'with no team-state query before its body');
  const after = await teamStorageState(first.databaseUrl, team.teamId);
  t.equal(after.usedStorage, before.usedStorage + 6 * MiB);
  t.equal(after.usedStorage, after.sumOfSizes);
});
