import t from 'tap';
import { defaultPlanLimits } from '../../src/domain/plans/plan-limits.ts';
import { migrate } from '../../src/db/orm.ts';
import { connectPg } from '../helpers/database.ts';
import { expectError, startTestServer, TEST_AUTH_SECRET } from '../helpers/server.ts';
import { multipartBody, send } from '../helpers/uploads.ts';

const server = await startTestServer(t);

async function teamLogActions(teamId: string): Promise<string[]> {
  const client = await connectPg(server.databaseUrl);
  try {
    const { rows } = await client.query<{ action: string }>('select action from team_log where team_id = $1 order by action', [teamId]);
    return rows.map((row) => row.action);
  } finally {
    await client.end();
  }
}

t.test('operator routes refuse a missing or wrong authSecret', async (t) => {
  const missing = await server.request('POST', '/v1/admin/teams', { body: { name: 'Alpha' } });
  expectError(t, missing, 401, 'error.unauthorized');
  const wrong = await server.request('POST', '/v1/admin/teams', { body: { name: 'Alpha' }, headers: { authSecret: `${TEST_AUTH_SECRET}x` } });
  expectError(t, wrong, 401, 'error.unauthorized');
  for (const [method, path] of [
    ['POST', '/v1/admin/teams/00000000-0000-4000-8000-000000000000/members'],
    ['POST', '/v1/admin/teams/00000000-0000-4000-8000-000000000000/api-keys'],
    ['POST', '/v1/admin/api-keys/00000000-0000-4000-8000-000000000000/reroll'],
    ['DELETE', '/v1/admin/api-keys/00000000-0000-4000-8000-000000000000'],
    ['PATCH', '/v1/admin/teams/00000000-0000-4000-8000-000000000000/limits'],
    ['GET', '/v1/admin/teams'],
    ['GET', '/v1/admin/teams/00000000-0000-4000-8000-000000000000/api-keys'],
  ] as const) {
    expectError(t, await server.request(method, path, method === 'GET' ? {} : { body: {} }), 401, 'error.unauthorized');
  }
});

t.test('POST /v1/admin/teams creates a team, its owner and a first key', async (t) => {
  const response = await server.admin('POST', '/v1/admin/teams', { name: 'Alpha' });
  t.equal(response.status, 201);
  const { team, owner, apiKey } = response.body;
  t.match(team, { id: String, name: 'Alpha', isActive: true, archived: false, planId: String, createdAt: String });
  t.match(owner, { id: String, teamId: team.id, userId: String, isTeamOwner: true, name: 'Owner' });
  t.same([...owner.permissions].sort(), [
    'team.accesses.manage', 'team.accesses.view', 'team.apiKeys.manage', 'team.automations.manage', 'team.files.manage', 'team.files.upload', 'team.groups.manage',
    'team.invites.manage', 'team.links.manage', 'team.logoffs.manage', 'team.logs.view', 'team.media.delete', 'team.media.edit', 'team.media.upload', 'team.media.view',
    'team.meetings.manage', 'team.meetings.view', 'team.members.manage', 'team.members.view', 'team.modules.manage', 'team.news.manage', 'team.penalties.manage',
    'team.penalties.view', 'team.portal.manage', 'team.settings.manage', 'team.tags.manage', 'team.todos.manage', 'team.todos.view', 'team.worryBox.manage',
  ]);
  t.match(apiKey, { id: String, teamId: team.id, teamMemberId: null, teamMember: null, key: /^tws_[0-9a-f]{16}_/ });
  t.same(await teamLogActions(team.id), ['API_KEY_CREATED', 'MEMBER_JOINED']);

  const list = await server.media('GET', `/v1/cdn/media/${team.id}`, apiKey.key);
  t.equal(list.status, 200);
  t.same(list.body, { media: [], totalCount: 0, usedTeamStorage: 0 });
});

t.test('team creation validates its body', async (t) => {
  expectError(t, await server.admin('POST', '/v1/admin/teams', {}), 400, 'error.missingArgument.name');
  expectError(t, await server.admin('POST', '/v1/admin/teams', { name: 'A' }), 400, 'error.badRequest');
  expectError(t, await server.admin('POST', '/v1/admin/teams', { name: 'x'.repeat(25) }), 400, 'error.badRequest');
  expectError(t, await server.admin('POST', '/v1/admin/teams', { name: 'Alpha', plan: 'gold' }), 400, 'error.badRequest');
  expectError(t, await server.admin('POST', '/v1/admin/teams', { name: 'Alpha', extra: 1 }), 400, 'error.badRequest');
  expectError(t, await server.admin('POST', '/v1/admin/teams', [1, 2]), 400, 'error.badRequest');
  const malformed = await server.request('POST', '/v1/admin/teams', { body: '{"name":', headers: { authSecret: TEST_AUTH_SECRET } });
  expectError(t, malformed, 400, 'error.badRequest');
});

t.test('plans: free by default, enterprise on request, each with its limits', async (t) => {
  const free = await server.createTeam('FreeTeam');
  const freeLimits = await server.admin('PATCH', `/v1/admin/teams/${free.teamId}/limits`, {});
  t.equal(freeLimits.status, 200);
  t.match(freeLimits.body, { maxTeamStorage: 97656, maxMediaFileSize: 10_000_000, maxMembers: 25, maxAutomations: 4, customerDiscordRoleId: '' });

  const enterprise = await server.createTeam('BigTeam', 'enterprise');
  const limits = await server.admin('PATCH', `/v1/admin/teams/${enterprise.teamId}/limits`, {});
  t.match(limits.body, { maxMediaFileSize: 250_000_000, maxTeamStorage: 1024 ** 3 });
});

t.test('PATCH limits overrides the plan for one team', async (t) => {
  const team = await server.createTeam('Limited');
  const response = await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxTeamStorage: 10, maxMediaFileSize: 1234, multiUseInvites: true, maxGames: null });
  t.equal(response.status, 200);
  t.match(response.body, { maxTeamStorage: 10, maxMediaFileSize: 1234, multiUseInvites: true, maxGames: null, maxMembers: 25 });
  const again = await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxMembers: 3 });
  t.match(again.body, { maxTeamStorage: 10, maxMembers: 3 }, 'overrides accumulate');
  t.ok((await teamLogActions(team.teamId)).includes('TEAM_UPDATED'));

  expectError(t, await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxTeamStorage: -1 }), 400, 'error.badRequest');
  expectError(t, await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxTeamStorage: '5' }), 400, 'error.badRequest');
  expectError(t, await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { noSuchLimit: 1 }), 400, 'error.badRequest');
  expectError(t, await server.admin('PATCH', '/v1/admin/teams/00000000-0000-4000-8000-000000000000/limits', { maxTeamStorage: 1 }), 404, 'error.notFound');
  expectError(t, await server.admin('PATCH', '/v1/admin/teams/not-a-uuid/limits', { maxTeamStorage: 1 }), 404, 'error.notFound');
});

t.test('limit overrides are stored as a JSON object; the answers carry only limit names (issue 17.4)', async (t) => {
  const limitNames = Object.keys(defaultPlanLimits).sort();
  const storedOverrides = async (teamId: string) => {
    const client = await connectPg(server.databaseUrl);
    try {
      const { rows } = await client.query('select jsonb_typeof(limit_overrides) as type, limit_overrides as value from team where id = $1', [teamId]);
      return rows[0];
    } finally {
      await client.end();
    }
  };
  const team = await server.createTeam('Overrides');
  t.same(await storedOverrides(team.teamId), { type: 'object', value: {} }, 'a new team has an empty object');

  const patched = await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxMembers: 3 });
  t.equal(patched.status, 200);
  t.same(Object.keys(patched.body).sort(), limitNames, 'the PATCH answer has exactly the limit names as keys');
  t.same(await storedOverrides(team.teamId), { type: 'object', value: { maxMembers: 3 } }, 'only the override is stored');

  const usage = await server.media('GET', `/v1/cdn/media/${team.teamId}/usage`, team.key);
  t.equal(usage.status, 200);
  t.same(Object.keys(usage.body.limits).sort(), limitNames, '/usage limits have exactly the limit names as keys');
  t.equal(usage.body.limits.maxMembers, 3);
});

t.test('the limit-overrides migration repairs the rows stored before the fix (issue 17.4)', async (t) => {
  const stringDefault = await server.createTeam('OldDefault');
  const junkKeys = await server.createTeam('OldPatched');
  const client = await connectPg(server.databaseUrl);
  t.teardown(() => client.end());
  // The state the old code left: the JSON string "{}", and after a PATCH the string's characters as keys.
  await client.query('alter table team drop constraint team_limit_overrides_check');
  await client.query(`update team set limit_overrides = '"{}"'::jsonb where id = $1`, [stringDefault.teamId]);
  await client.query(`update team set limit_overrides = '{"0": "{", "1": "}", "maxMembers": 3}'::jsonb where id = $1`, [junkKeys.teamId]);
  await client.query(`delete from mikro_orm_migrations where name = 'Migration20261123020000LimitOverridesObject'`);

  await migrate(server.app.services.orm);

  const { rows } = await client.query('select id, limit_overrides from team where id = any($1) order by name', [[stringDefault.teamId, junkKeys.teamId]]);
  t.same(rows, [
    { id: stringDefault.teamId, limit_overrides: {} },
    { id: junkKeys.teamId, limit_overrides: { maxMembers: 3 } },
  ]);
  await t.rejects(client.query(`update team set limit_overrides = '"{}"'::jsonb where id = $1`, [stringDefault.teamId]), /team_limit_overrides_check/, 'only an object can be stored');
  const usage = await server.media('GET', `/v1/cdn/media/${junkKeys.teamId}/usage`, junkKeys.key);
  t.same(Object.keys(usage.body.limits).sort(), Object.keys(defaultPlanLimits).sort());
});

t.test('POST members creates a member and enforces names and limits', async (t) => {
  const team = await server.createTeam('Members');
  const created = await server.admin('POST', `/v1/admin/teams/${team.teamId}/members`, { name: 'viewer_1', permissions: ['team.media.view'] });
  t.equal(created.status, 201);
  t.match(created.body, { id: String, teamId: team.teamId, userId: String, name: 'viewer_1', permissions: ['team.media.view'], isTeamOwner: false });
  t.ok((await teamLogActions(team.teamId)).filter((action) => action === 'MEMBER_JOINED').length === 2, 'MEMBER_JOINED logged');

  expectError(t, await server.admin('POST', `/v1/admin/teams/${team.teamId}/members`, { name: 'viewer_1', permissions: [] }), 409, 'error.conflict');
  expectError(t, await server.admin('POST', `/v1/admin/teams/${team.teamId}/members`, { name: 'ab', permissions: [] }), 400, 'error.badRequest');
  expectError(t, await server.admin('POST', `/v1/admin/teams/${team.teamId}/members`, { name: 'bad name!', permissions: [] }), 400, 'error.badRequest');
  expectError(t, await server.admin('POST', `/v1/admin/teams/${team.teamId}/members`, { name: 'someone' }), 400, 'error.missingArgument.permissions');
  expectError(t, await server.admin('POST', `/v1/admin/teams/${team.teamId}/members`, { name: 'someone', permissions: ['not a permission'] }), 400, 'error.badRequest');
  expectError(t, await server.admin('POST', '/v1/admin/teams/00000000-0000-4000-8000-000000000000/members', { name: 'someone', permissions: [] }), 404, 'error.notFound');

  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxMembers: 2 });
  const overLimit = await server.admin('POST', `/v1/admin/teams/${team.teamId}/members`, { name: 'third_one', permissions: [] });
  expectError(t, overLimit, 402, 'error.teamLimits.maxMembers');
});

t.test('groups: created with permissions and colours, members added to them', async (t) => {
  const team = await server.createTeam('Groups');
  const group = await server.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Uploaders', permissions: ['team.media.upload'], color: '#1e90ff' });
  t.equal(group.status, 201);
  t.match(group.body, { id: String, teamId: team.teamId, name: 'Uploaders', permissions: ['team.media.upload'], color: '#1e90ff' });
  expectError(t, await server.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'X', permissions: [] }), 400, 'error.badRequest');
  expectError(t, await server.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Colour', permissions: [], color: 'blue' }), 400, 'error.badRequest');

  const member = await server.admin('POST', `/v1/admin/teams/${team.teamId}/members`, { name: 'bot_1', permissions: [], groupIds: [group.body.id] });
  t.equal(member.status, 201);
  const other = await server.admin('POST', `/v1/admin/teams/${team.teamId}/members`, { name: 'bot_2', permissions: [] });
  const added = await server.admin('POST', `/v1/admin/teams/${team.teamId}/members/${other.body.id}/groups`, { groupId: group.body.id });
  t.equal(added.status, 204);
  expectError(t, await server.admin('POST', `/v1/admin/teams/${team.teamId}/members/${other.body.id}/groups`, { groupId: group.body.id }), 409, 'error.conflict');
  t.ok((await teamLogActions(team.teamId)).includes('MEMBER_GROUP_ADDED'));
  t.ok((await teamLogActions(team.teamId)).includes('GROUP_CREATED'));

  const otherTeam = await server.createTeam('Elsewhere');
  const foreign = await server.admin('POST', `/v1/admin/teams/${otherTeam.teamId}/members`, { name: 'spy_1', permissions: [], groupIds: [group.body.id] });
  expectError(t, foreign, 404, 'error.notFound');
});

t.test('API keys: create, reroll and delete', async (t) => {
  const team = await server.createTeam('Keys');
  const member = await server.admin('POST', `/v1/admin/teams/${team.teamId}/members`, { name: 'uploader', permissions: ['team.media.upload'] });

  const created = await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, {
    description: 'game server 1', teamMemberId: member.body.id, scopes: ['media:upload'],
  });
  t.equal(created.status, 201);
  t.match(created.body, {
    id: String, teamId: team.teamId, description: 'game server 1', teamMemberId: member.body.id,
    teamMember: { id: member.body.id, name: 'uploader' }, scopes: ['media:upload'], key: /^tws_/,
  });

  const client = await connectPg(server.databaseUrl);
  t.teardown(() => client.end());
  const stored = await client.query<{ prefix: string; secret_hash: string }>('select prefix, secret_hash from api_key where id = $1', [created.body.id]);
  t.notMatch(JSON.stringify(stored.rows), created.body.key, 'the key itself is never stored');
  t.match(stored.rows[0]!.secret_hash, /^[0-9a-f]{64}$/);

  const plain = await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, {});
  t.equal(plain.status, 201);
  t.match(plain.body, { description: null, teamMemberId: null, scopes: [] });

  expectError(t, await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, { scopes: ['media:delete'] }), 400, 'error.badRequest');
  expectError(t, await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, { teamMemberId: 'nope' }), 400, 'error.badRequest');
  const otherTeam = await server.createTeam('OtherKeys');
  expectError(t, await server.admin('POST', `/v1/admin/teams/${otherTeam.teamId}/api-keys`, { teamMemberId: member.body.id }), 404, 'error.notFound');

  const rerolled = await server.admin('POST', `/v1/admin/api-keys/${plain.body.id}/reroll`);
  t.equal(rerolled.status, 200);
  t.equal(rerolled.body.id, plain.body.id);
  t.not(rerolled.body.key, plain.body.key);

  const deleted = await server.admin('DELETE', `/v1/admin/api-keys/${plain.body.id}`);
  t.equal(deleted.status, 204);
  expectError(t, await server.admin('DELETE', `/v1/admin/api-keys/${plain.body.id}`), 404, 'error.notFound');
  expectError(t, await server.admin('POST', `/v1/admin/api-keys/${plain.body.id}/reroll`), 404, 'error.notFound');
  const actions = await teamLogActions(team.teamId);
  t.equal(actions.filter((action) => action === 'API_KEY_CREATED').length, 3);
  t.equal(actions.filter((action) => action === 'API_KEY_DELETED').length, 1);
});

t.test('DEFAULT_PLAN chooses the plan of a team created without one', async (t) => {
  const enterpriseByDefault = await startTestServer(t, { settings: { DEFAULT_PLAN: 'enterprise' } });
  const team = await enterpriseByDefault.createTeam('Defaulted');
  const limits = await enterpriseByDefault.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, {});
  t.match(limits.body, { maxMediaFileSize: 250_000_000, maxTeamStorage: 1024 ** 3 }, 'the enterprise plan');
  const free = await enterpriseByDefault.createTeam('AskedFree', 'free');
  t.match((await enterpriseByDefault.admin('PATCH', `/v1/admin/teams/${free.teamId}/limits`, {})).body, { maxMediaFileSize: 10_000_000 }, 'a named plan still wins');
});

t.test('a DEFAULT_PLAN that names no plan stops start-up, listing the plans', async (t) => {
  await t.rejects(
    startTestServer(t, { settings: { DEFAULT_PLAN: 'gold' } }),
    { name: 'ConfigError', message: 'Invalid configuration: DEFAULT_PLAN must name an existing plan (got "gold"; the plans are free, enterprise)' },
  );
});

t.test('a 402 for a file over the plan names the file size, the limit and how to raise it (issue 32.6)', async (t) => {
  const team = await server.createTeam('SmallPlan');
  const tus = (length: number) => server.media('POST', `/v1/cdn/media/${team.teamId}/tus`, team.key, {
    headers: { 'tus-resumable': '1.0.0', 'upload-length': String(length), 'upload-metadata': `filename ${Buffer.from('clip.mp4').toString('base64')}` },
  });
  const tooLarge = await tus(50 * 1024 * 1024);
  expectError(t, tooLarge, 402, 'error.teamLimits.maxMediaFileSize');
  t.equal(tooLarge.body.value, 10_000_000, 'value: the limit, as before');
  t.equal(
    tooLarge.body.message,
    'The file is larger than the team\'s limit: it is 52428800 bytes (52.4 MB), the limit (maxMediaFileSize) is 10000000 bytes (10 MB) per file; '
      + 'an operator raises it by moving the team to a larger plan (PUT /v1/admin/teams/{teamId}/plan with {"plan": "enterprise"}) '
      + 'or by overriding the limit for the team (PATCH /v1/admin/teams/{teamId}/limits)',
  );

  // From the body's length, before the body is read: the least file it can hold.
  const lowered = await server.createTeam('LoweredLimit');
  await server.admin('PATCH', `/v1/admin/teams/${lowered.teamId}/limits`, { maxMediaFileSize: 1000 });
  const multipart = multipartBody([{ content: Buffer.alloc(5000), fileName: 'big.png', contentType: 'image/png' }]);
  const refused = await send(server, 'POST', `/v1/cdn/media/${lowered.teamId}/upload/file`, lowered.key, multipart.body, { 'content-type': multipart.contentType });
  expectError(t, refused, 402, 'error.teamLimits.maxMediaFileSize');
  t.match(refused.body.message, /^The file is larger than the team's limit: it is at least \d+ bytes \([\d.]+ kB\), the limit \(maxMediaFileSize\) is 1000 bytes \(1 kB\) per file; an operator raises it/);

  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxTeamStorage: 1024 });
  const full = await tus(2 * 1024 * 1024);
  expectError(t, full, 402, 'error.teamLimits.maxTeamStorage');
  t.equal(full.body.value, 'maxTeamStorage');
  t.match(full.body.message, /^The team storage is full: the file \(2097152 bytes \(2\.1 MB\)\) does not fit in what is left of the team's storage limit \(maxTeamStorage\) of 1024 KiB, 1048576 bytes \(1 MB\); delete files, or an operator raises it .*PATCH \/v1\/admin\/teams\/\{teamId\}\/limits/);
});

t.test('GET /v1/admin/teams lists the teams, paged and searchable by name; a team\'s keys are listed without secrets', async (t) => {
  const lister = await startTestServer(t);
  const made: { teamId: string; key: string; keyId: string }[] = [];
  for (const name of ['Red Wolves', 'Blue Jays', 'red_pandas', 'Green 100%']) made.push(await lister.createTeam(name));
  const get = (path: string, headers: Record<string, string> = {}) =>
    lister.request('GET', path, { headers: { authSecret: TEST_AUTH_SECRET, ...headers } });

  const all = await get('/v1/admin/teams');
  t.equal(all.status, 200);
  t.equal(all.body.count, 4);
  t.same(all.body.data.map((team: { name: string }) => team.name), ['Green 100%', 'red_pandas', 'Blue Jays', 'Red Wolves'], 'newest first');
  t.match(all.body.data[3], { id: made[0]!.teamId, name: 'Red Wolves', planId: String, archived: false });

  const paged = await get('/v1/admin/teams', { pageNumber: '2', pageSize: '3' });
  t.same(paged.body, { data: [all.body.data[3]], count: 4 }, 'the spec\'s paging headers');
  t.same((await get('/v1/admin/teams?pageNumber=2&pageSize=3')).body, paged.body, 'or query parameters');
  expectError(t, await get('/v1/admin/teams', { pageSize: '0' }), 400, 'error.badRequest');

  const red = await get('/v1/admin/teams?search=RED');
  t.same(red.body.data.map((team: { name: string }) => team.name), ['red_pandas', 'Red Wolves'], 'any case');
  t.equal(red.body.count, 2);
  t.same((await get(`/v1/admin/teams?search=${encodeURIComponent('%')}`)).body.data.map((team: { name: string }) => team.name), ['Green 100%'], '% is a character, not a wildcard');
  t.same((await get('/v1/admin/teams?search=d_p')).body.data.map((team: { name: string }) => team.name), ['red_pandas'], '_ too');
  t.same((await get('/v1/admin/teams?search=nobody')).body, { data: [], count: 0 });
  expectError(t, await get(`/v1/admin/teams?search=${'x'.repeat(300)}`), 400, 'error.badRequest');

  const second = await lister.admin('POST', `/v1/admin/teams/${made[0]!.teamId}/api-keys`, { description: 'game server', scopes: ['media:upload'] });
  const keys = await get(`/v1/admin/teams/${made[0]!.teamId}/api-keys`);
  t.equal(keys.status, 200);
  t.same(keys.body.map((key: { id: string }) => key.id), [second.body.id, made[0]!.keyId], 'newest first');
  t.match(keys.body[0], { teamId: made[0]!.teamId, description: 'game server', scopes: ['media:upload'], teamMemberId: null });
  t.notOk(JSON.stringify(keys.body).includes('tws_'), 'no secret, nor any part of one');
  t.notOk(keys.body.some((key: object) => 'key' in key));
  t.same((await get(`/v1/admin/teams/${made[1]!.teamId}/api-keys`)).body.map((key: { id: string }) => key.id), [made[1]!.keyId], 'only that team\'s');
  expectError(t, await get('/v1/admin/teams/00000000-0000-4000-8000-000000000000/api-keys'), 404, 'error.notFound');
});
