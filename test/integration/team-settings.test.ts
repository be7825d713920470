import t from 'tap';
import { expectError, startTestServer } from '../helpers/server.ts';
import { memberWithKey, tableSnapshot, teamLogRows } from '../helpers/team-admin.ts';

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
const team = await server.createTeam('Settings');
const base = `/v1/teams/${team.teamId}`;
const teamRow = () => tableSnapshot(server, 'select * from team where id = $1', [team.teamId]);

t.test('any full key of the team reads the team, its minimal and its join info', async (t) => {
  const reader = await memberWithKey(server, team.teamId, 'reader', []);
  const got = await server.media('GET', base, reader.key);
  t.equal(got.status, 200);
  t.match(got.body, { id: team.teamId, name: 'Settings', archived: false, timezone: 'UTC', locale: 'en', logo: null });
  t.ok(got.headers.get('ratelimit-remaining'), 'RateLimit headers');
  const minimal = await server.media('GET', `${base}/minimal`, reader.key);
  t.same(minimal.body, { id: team.teamId, name: 'Settings', logo: null, priceId: null });
  const join = await server.media('GET', `${base}/join-info`, reader.key);
  t.same(join.body, { id: team.teamId, name: 'Settings', logo: null, priceId: null, requirements: { discord: false, google: false, minecraft: false, hytale: false }, connections: [] });
});

t.test('PATCH changes the team, logs TEAM_UPDATED with the changed fields and the actor', async (t) => {
  const admin = await memberWithKey(server, team.teamId, 'settingsAdmin', ['team.settings.manage']);
  const response = await server.media('PATCH', base, admin.key, {
    body: { name: 'Renamed', logo: 'https://cdn.example.com/logo.png', timezone: 'Europe/Berlin', locale: 'de-DE', requirements: { discord: true } },
  });
  t.equal(response.status, 200);
  t.match(response.body, { name: 'Renamed', logo: 'https://cdn.example.com/logo.png', timezone: 'Europe/Berlin', locale: 'de-DE' });
  const join = await server.media('GET', `${base}/join-info`, admin.key);
  t.same(join.body.requirements, { discord: true, google: false, minecraft: false, hytale: false });
  const logs = (await teamLogRows(server, team.teamId)).filter((row) => row.action === 'TEAM_UPDATED');
  t.equal(logs.length, 1);
  t.same(logs[0]!.data, { name: 'Renamed', logo: 'https://cdn.example.com/logo.png', timezone: 'Europe/Berlin', locale: 'de-DE', requirements: { discord: true } });
  t.equal(logs[0]!.team_member_id, admin.memberId);

  const same = await server.media('PATCH', base, admin.key, { body: { name: 'Renamed' } });
  t.equal(same.status, 200);
  t.equal((await teamLogRows(server, team.teamId)).filter((row) => row.action === 'TEAM_UPDATED').length, 1, 'no change, no log');
  const cleared = await server.media('PATCH', base, admin.key, { body: { logo: null } });
  t.equal(cleared.body.logo, null);
});

t.test('PATCH validates every field and changes nothing on bad input', async (t) => {
  const before = await teamRow();
  for (const [body, key] of [
    [{ name: 'x' }, 'error.badRequest'],
    [{ name: 'x'.repeat(25) }, 'error.badRequest'],
    [{ name: 42 }, 'error.badRequest'],
    [{ timezone: 'Mars/Olympus' }, 'error.badRequest'],
    [{ timezone: '+01:00' }, 'error.badRequest'],
    [{ locale: 'not a locale!' }, 'error.badRequest'],
    [{ logo: 'javascript:alert(1)' }, 'error.badRequest'],
    [{ requirements: { steam: true } }, 'error.badRequest'],
    [{ requirements: { discord: 'yes' } }, 'error.badRequest'],
    [{ archived: true }, 'error.badRequest'],
    [[1], 'error.badRequest'],
  ] as const) {
    expectError(t, await server.media('PATCH', base, team.key, { body }), 400, key);
  }
  expectError(t, await server.media('PATCH', base, team.key, { body: '{"name":' }), 400, 'error.badRequest');
  t.equal(await teamRow(), before, 'the team is unchanged');
});

t.test('archive and unarchive, each logged once', async (t) => {
  const archived = await server.media('POST', `${base}/archive`, team.key);
  t.equal(archived.status, 200);
  t.equal(archived.body.archived, true);
  t.equal((await server.media('POST', `${base}/archive`, team.key)).body.archived, true, 'idempotent');
  const unarchived = await server.media('POST', `${base}/unarchive`, team.key);
  t.equal(unarchived.body.archived, false);
  const rows = (await teamLogRows(server, team.teamId)).filter((row) => row.data?.archived !== undefined);
  t.same(rows.map((row) => [row.action, row.data, row.team_member_id]), [['TEAM_UPDATED', { archived: true }, team.ownerId], ['TEAM_UPDATED', { archived: false }, team.ownerId]], 'the owner-acting key is logged as the owner');
});

t.test('changes need team.settings.manage (403); an upload-scoped key reaches no team route (403)', async (t) => {
  const viewer = await memberWithKey(server, team.teamId, 'noSettings', ['team.media.view', 'team.logs.view']);
  const uploader = await memberWithKey(server, team.teamId, 'uploaderOnly', ['team.settings.manage', 'team.media.upload'], { scopes: ['media:upload'] });
  const before = await teamRow();
  for (const [method, path] of [['PATCH', base], ['POST', `${base}/archive`], ['POST', `${base}/unarchive`]] as const) {
    expectError(t, await server.media(method, path, viewer.key, { body: { name: 'Nope' } }), 403, 'error.forbidden');
  }
  for (const [method, path] of [['GET', base], ['GET', `${base}/minimal`], ['GET', `${base}/join-info`], ['PATCH', base], ['POST', `${base}/archive`], ['GET', `${base}/logs`]] as const) {
    expectError(t, await server.media(method, path, uploader.key, method === 'GET' ? {} : { body: { name: 'Nope' } }), 403, 'error.forbidden');
  }
  expectError(t, await server.media('GET', base, 'tws_0000000000000000_nope'), 401, 'error.unauthorized');
  t.equal(await teamRow(), before);
});
