import t from 'tap';
import { connectPg } from '../helpers/database.ts';
import { expectError, startTestServer, type TestServer } from '../helpers/server.ts';
import { heldUpload, MiB, pngLike, teamStorageState, uploadJson, uploadMultipart } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';

// The automation routes: CRUD, the maxAutomations limit, validation, private targets,
// tenant isolation and permissions, the operator routes; and the outbox the deliveries come from.
// AUTOMATION_ALLOW_PRIVATE_TARGETS keeps its default (off) here; nothing in this file is delivered.

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
const db = await connectPg(server.databaseUrl);
t.teardown(() => db.end());

const HOOK = 'https://hooks.example.com/media';
const base = (teamId: string) => `/v1/teams/${teamId}/automations`;

async function memberKey(target: TestServer, teamId: string, name: string, permissions: string[], extra: Record<string, unknown> = {}) {
  const member = await target.admin('POST', `/v1/admin/teams/${teamId}/members`, { name, permissions });
  const key = await target.admin('POST', `/v1/admin/teams/${teamId}/api-keys`, { teamMemberId: member.body.id, ...extra });
  return { memberId: member.body.id as string, key: key.body.key as string };
}

async function count(sql: string, params: unknown[]): Promise<number> {
  const { rows } = await db.query<{ count: string }>(sql, params);
  return Number(rows[0]!.count);
}

const automationCount = (teamId: string) => count('select count(*) from automation where team_id = $1', [teamId]);
const eventCount = (teamId: string) => count(`select count(*) from media_event where team_id = $1 and kind = 'media.uploaded'`, [teamId]);

async function logActions(teamId: string) {
  const { rows } = await db.query<{ action: string; team_member_id: string | null; target_identifier: string | null; data: any }>(
    `select action, team_member_id, target_identifier, data from team_log where team_id = $1 and action like 'AUTOMATION_%' order by created_at, action`,
    [teamId],
  );
  return rows;
}

t.test('a manager creates, reads, lists, changes, rotates and deletes automations; every change is logged', async (t) => {
  const team = await server.createTeam('Crud');
  const manager = await memberKey(server, team.teamId, 'hook_admin', ['team.automations.manage']);
  const folder = (await server.media('POST', `/v1/cdn/media/${team.teamId}/folders`, team.key, { body: { name: 'shots' } })).body;

  const created = await server.media('POST', base(team.teamId), manager.key, {
    body: { name: ' Screenshots ', url: `${HOOK}#frag`, folderId: folder.id, includeSubfolders: true, tags: [' map:dust', 'map:dust', 'srv'] },
  });
  t.equal(created.status, 201);
  t.match(created.body, {
    id: String, teamId: team.teamId, name: 'Screenshots', kind: 'webhook', url: HOOK, eventKinds: ['media.uploaded'],
    folderId: folder.id, includeSubfolders: true, tags: ['map:dust', 'srv'], enabled: true, createdAt: String, updatedAt: String,
    secret: /^whsec_/,
  });
  const id = created.body.id;

  const read = await server.media('GET', `${base(team.teamId)}/${id}`, manager.key);
  t.equal(read.status, 200);
  t.notOk('secret' in read.body, 'the secret is not shown again');
  const { secret: _secret, ...withoutSecret } = created.body;
  t.same(read.body, withoutSecret);
  const list = await server.media('GET', base(team.teamId), manager.key);
  t.same(list.body, { data: [withoutSecret], count: 1 });
  t.notOk(JSON.stringify(list.body).includes(created.body.secret), 'no secret in the list');

  const discord = await server.media('POST', base(team.teamId), team.key, { body: { name: 'Chat', kind: 'discord', url: 'https://discord.com/api/webhooks/1/abc' } });
  t.equal(discord.status, 201, 'the owner key manages too');
  t.equal((await server.media('GET', base(team.teamId), manager.key)).body.count, 2);

  const patched = await server.media('PATCH', `${base(team.teamId)}/${id}`, manager.key, {
    body: { name: 'Renamed', folderId: null, tags: [], enabled: false, url: 'http://hooks.example.com/other' },
  });
  t.equal(patched.status, 200);
  t.match(patched.body, { id, name: 'Renamed', folderId: null, tags: [], enabled: false, url: 'http://hooks.example.com/other', includeSubfolders: true });
  t.notOk('secret' in patched.body);
  expectError(t, await server.media('PATCH', `${base(team.teamId)}/${id}`, manager.key, { body: {} }), 400, 'error.badRequest');
  expectError(t, await server.media('PATCH', `${base(team.teamId)}/${id}`, manager.key, { body: { tags: ['Crash'] } }), 400, 'error.badRequest');
  t.same((await server.media('GET', `${base(team.teamId)}/${id}`, manager.key)).body.tags, [], 'an upper-case tag is refused, not lower-cased');

  const rotated = await server.media('POST', `${base(team.teamId)}/${id}/rotate-secret`, manager.key);
  t.equal(rotated.status, 200);
  t.match(rotated.body, { id, secret: /^whsec_/ });
  t.not(rotated.body.secret, created.body.secret, 'a new secret');
  const { rows } = await db.query<{ secret: string }>('select secret from automation where id = $1', [id]);
  t.equal(rows[0]!.secret, rotated.body.secret, 'the new secret is the one in use');

  const deliveriesList = await server.media('GET', `${base(team.teamId)}/${id}/deliveries`, manager.key);
  t.same(deliveriesList.body, { data: [], count: 0 });
  expectError(t, await server.media('GET', `${base(team.teamId)}/${id}/deliveries?status=lost`, manager.key), 400, 'error.badRequest');
  t.same((await server.media('POST', `${base(team.teamId)}/${id}/deliveries/retry-failed`, manager.key)).body, { retried: 0 });
  expectError(
    t, await server.media('POST', `${base(team.teamId)}/${id}/deliveries/00000000-0000-4000-8000-000000000000/retry`, manager.key), 404, 'error.notFound',
  );

  const deleted = await server.media('DELETE', `${base(team.teamId)}/${id}`, manager.key);
  t.equal(deleted.status, 204);
  expectError(t, await server.media('GET', `${base(team.teamId)}/${id}`, manager.key), 404, 'error.notFound');
  expectError(t, await server.media('DELETE', `${base(team.teamId)}/${id}`, manager.key), 404, 'error.notFound');

  const logged = await logActions(team.teamId);
  t.same(logged.map((row) => row.action), ['AUTOMATION_CREATED', 'AUTOMATION_CREATED', 'AUTOMATION_UPDATED', 'AUTOMATION_UPDATED', 'AUTOMATION_DELETED']);
  t.equal(logged[0]!.team_member_id, manager.memberId, 'the acting member is logged');
  t.equal(logged[1]!.team_member_id, team.ownerId, 'a key linked to no member is logged as the owner it acts as');
  t.same(logged[2]!.data.changed.sort(), ['enabled', 'folderId', 'name', 'tags', 'url']);
  t.same(logged[3]!.data.changed, ['secret']);
  t.ok(logged.every((row) => row.target_identifier !== null));
  t.notOk(JSON.stringify(logged).includes('hooks.example.com') || JSON.stringify(logged).includes('discord.com'), 'URLs are never logged');
});

t.test('the fifth automation is 402 error.teamLimits.maxAutomations and leaves nothing behind', async (t) => {
  const team = await server.createTeam('Limits');
  for (let i = 0; i < 4; i++) {
    t.equal((await server.media('POST', base(team.teamId), team.key, { body: { name: `hook ${i}`, url: HOOK } })).status, 201);
  }
  const fifth = await server.media('POST', base(team.teamId), team.key, { body: { name: 'hook 4', url: HOOK } });
  expectError(t, fifth, 402, 'error.teamLimits.maxAutomations');
  t.same(fifth.body, { name: 'TeamLimitError', message: 'The team has reached its limit of 4 automations', status: 402, messageKey: 'error.teamLimits.maxAutomations', value: 4 });
  t.equal(await automationCount(team.teamId), 4);
  t.equal((await logActions(team.teamId)).length, 4, 'no log entry for the refused one');

  // Concurrent creations never pass the limit either.
  const other = await server.createTeam('Race');
  const raced = await Promise.all(Array.from({ length: 10 }, (_, i) => server.media('POST', base(other.teamId), other.key, { body: { name: `r${i}`, url: HOOK } })));
  t.same(raced.map((response) => response.status).sort(), [...Array(4).fill(201), ...Array(6).fill(402)]);
  t.equal(await automationCount(other.teamId), 4);

  // The operator's limit override counts; null is unlimited.
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxAutomations: 5 });
  t.equal((await server.media('POST', base(team.teamId), team.key, { body: { name: 'hook 4', url: HOOK } })).status, 201);
  expectError(t, await server.media('POST', base(team.teamId), team.key, { body: { name: 'hook 5', url: HOOK } }), 402, 'error.teamLimits.maxAutomations');
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxAutomations: null });
  t.equal((await server.media('POST', base(team.teamId), team.key, { body: { name: 'hook 5', url: HOOK } })).status, 201);
  // Deleting one makes room again.
  const capped = await server.createTeam('Room');
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push((await server.media('POST', base(capped.teamId), capped.key, { body: { name: `c${i}`, url: HOOK } })).body.id);
  t.equal((await server.media('DELETE', `${base(capped.teamId)}/${ids[0]}`, capped.key)).status, 204);
  t.equal((await server.media('POST', base(capped.teamId), capped.key, { body: { name: 'again', url: HOOK } })).status, 201);
});

t.test('invalid input is 400 (or 404 for an unknown folder) with the spec body and creates nothing', async (t) => {
  const team = await server.createTeam('Invalid');
  const other = await server.createTeam('InvalidOther');
  const foreignFolder = (await server.media('POST', `/v1/cdn/media/${other.teamId}/folders`, other.key, { body: { name: 'theirs' } })).body;
  const cases: [string, unknown, number, string][] = [
    ['no name', { url: HOOK }, 400, 'error.missingArgument.name'],
    ['no url', { name: 'x' }, 400, 'error.missingArgument.url'],
    ['empty name', { name: '  ', url: HOOK }, 400, 'error.badRequest'],
    ['long name', { name: 'x'.repeat(101), url: HOOK }, 400, 'error.badRequest'],
    ['ftp url', { name: 'x', url: 'ftp://hooks.example.com/x' }, 400, 'error.badRequest'],
    ['javascript url', { name: 'x', url: 'javascript:alert(1)' }, 400, 'error.badRequest'],
    ['relative url', { name: 'x', url: '/hooks' }, 400, 'error.badRequest'],
    ['credentials in url', { name: 'x', url: 'https://user:pw@hooks.example.com/' }, 400, 'error.badRequest'],
    ['url too long', { name: 'x', url: `https://hooks.example.com/${'a'.repeat(2100)}` }, 400, 'error.badRequest'],
    ['unknown kind', { name: 'x', url: HOOK, kind: 'slack' }, 400, 'error.badRequest'],
    ['unknown event kind', { name: 'x', url: HOOK, eventKinds: ['media.deleted'] }, 400, 'error.badRequest'],
    ['no event kinds', { name: 'x', url: HOOK, eventKinds: [] }, 400, 'error.badRequest'],
    ['bad tag', { name: 'x', url: HOOK, tags: ['no spaces'] }, 400, 'error.badRequest'],
    ['upper-case tag', { name: 'x', url: HOOK, tags: ['Map:Dust'] }, 400, 'error.badRequest'],
    ['21 tags', { name: 'x', url: HOOK, tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, 400, 'error.badRequest'],
    ['folderId not a uuid', { name: 'x', url: HOOK, folderId: 'shots' }, 400, 'error.badRequest'],
    ['unknown field', { name: 'x', url: HOOK, secret: 'mine' }, 400, 'error.badRequest'],
    ['not an object', ['x'], 400, 'error.badRequest'],
    ['unknown folder', { name: 'x', url: HOOK, folderId: '00000000-0000-4000-8000-000000000000' }, 404, 'error.notFound'],
    ["another team's folder", { name: 'x', url: HOOK, folderId: foreignFolder.id }, 404, 'error.notFound'],
  ];
  for (const [name, body, status, messageKey] of cases) {
    const response = await server.media('POST', base(team.teamId), team.key, { body });
    expectError(t, response, status, messageKey);
    t.pass(name);
  }
  expectError(t, await server.media('POST', base(team.teamId), team.key, { body: '{"name": ' }), 400, 'error.badRequest');
  t.equal(await automationCount(team.teamId), 0, 'nothing was created');
  t.same(await logActions(team.teamId), [], 'nothing was logged');

  const good = (await server.media('POST', base(team.teamId), team.key, { body: { name: 'ok', url: HOOK } })).body;
  expectError(t, await server.media('PATCH', `${base(team.teamId)}/${good.id}`, team.key, { body: { url: 'file:///etc/passwd' } }), 400, 'error.badRequest');
  expectError(t, await server.media('PATCH', `${base(team.teamId)}/${good.id}`, team.key, { body: { folderId: foreignFolder.id } }), 404, 'error.notFound');
  expectError(t, await server.media('PATCH', `${base(team.teamId)}/${good.id}`, team.key, { body: { kind: 'email' } }), 400, 'error.badRequest');
  t.same((await server.media('GET', `${base(team.teamId)}/${good.id}`, team.key)).body.url, HOOK, 'unchanged');
});

t.test('private and loopback targets are refused while AUTOMATION_ALLOW_PRIVATE_TARGETS is off', async (t) => {
  const team = await server.createTeam('Private');
  for (const url of [
    'http://127.0.0.1:8080/hook', 'http://localhost/hook', 'http://api.localhost/hook', 'http://10.1.2.3/', 'http://192.168.0.10/',
    'http://172.20.0.1/', 'http://169.254.169.254/latest/meta-data', 'http://[::1]:3000/', 'http://[fd00::1]/', 'http://[::ffff:127.0.0.1]/',
    'http://0.0.0.0/', 'http://100.64.0.1/',
    // IPv6 forms that embed a private IPv4 address (issue 17.9).
    'http://[::127.0.0.1]/', 'http://[::ffff:0:127.0.0.1]/', 'http://[2002:7f00:1::1]/', 'http://[64:ff9b::127.0.0.1]/',
  ]) {
    const response = await server.media('POST', base(team.teamId), team.key, { body: { name: 'x', url } });
    expectError(t, response, 400, 'error.badRequest');
    t.match(response.body.message, /not public/, url);
  }
  t.equal(await automationCount(team.teamId), 0);
  t.equal((await server.media('POST', base(team.teamId), team.key, { body: { name: 'x', url: 'https://93.184.215.14/hook' } })).status, 201, 'a public address is fine');
});

t.test("another team's key: 401 on this team's routes, 404 for this team's ids on its own routes; nothing changes", async (t) => {
  const a = await server.createTeam('IsoA');
  const b = await server.createTeam('IsoB');
  const hook = (await server.media('POST', base(a.teamId), a.key, { body: { name: 'A hook', url: HOOK } })).body;
  const before = JSON.stringify((await server.media('GET', base(a.teamId), a.key)).body);
  const A = base(a.teamId);
  const B = base(b.teamId);
  const cases: [string, string, number, unknown?][] = [
    ['GET', A, 401], ['POST', A, 401, { name: 'mine', url: HOOK }], ['GET', `${A}/${hook.id}`, 401], ['PATCH', `${A}/${hook.id}`, 401, { enabled: false }],
    ['DELETE', `${A}/${hook.id}`, 401], ['POST', `${A}/${hook.id}/rotate-secret`, 401], ['GET', `${A}/${hook.id}/deliveries`, 401],
    ['POST', `${A}/${hook.id}/deliveries/retry-failed`, 401],
    ['GET', `${B}/${hook.id}`, 404], ['PATCH', `${B}/${hook.id}`, 404, { enabled: false, url: 'https://evil.example.com/' }], ['DELETE', `${B}/${hook.id}`, 404],
    ['POST', `${B}/${hook.id}/rotate-secret`, 404], ['GET', `${B}/${hook.id}/deliveries`, 404], ['POST', `${B}/${hook.id}/deliveries/retry-failed`, 404],
    ['GET', `${B}/not-a-uuid`, 404],
  ];
  for (const [method, path, status, body] of cases) {
    const response = await server.media(method, path, b.key, body === undefined ? {} : { body });
    expectError(t, response, status, status === 401 ? 'error.unauthorized' : 'error.notFound');
    t.notOk(JSON.stringify(response.body).includes('A hook') || JSON.stringify(response.body).includes(HOOK), `${method} ${path.replace(a.teamId, 'A').replace(b.teamId, 'B')} reveals nothing`);
  }
  t.same((await server.media('GET', B, b.key)).body, { data: [], count: 0 }, "B's list does not show A's automation");
  t.equal(JSON.stringify((await server.media('GET', A, a.key)).body), before, "A's automation is unchanged");
  t.equal(await automationCount(b.teamId), 0);
});

t.test('team.automations.manage is needed: 403 without it, also for keys narrowed to media:upload', async (t) => {
  const team = await server.createTeam('Perms');
  const hook = (await server.media('POST', base(team.teamId), team.key, { body: { name: 'hook', url: HOOK } })).body;
  const mediaAdmin = await memberKey(server, team.teamId, 'media_admin', ['team.media.view', 'team.media.upload', 'team.media.edit', 'team.media.delete']);
  const scoped = await memberKey(server, team.teamId, 'uploader', ['team.media.upload', 'team.automations.manage'], { scopes: ['media:upload'] });
  for (const key of [mediaAdmin.key, scoped.key]) {
    for (const [method, path, body] of [
      ['GET', base(team.teamId)], ['POST', base(team.teamId), { name: 'x', url: HOOK }], ['GET', `${base(team.teamId)}/${hook.id}`],
      ['PATCH', `${base(team.teamId)}/${hook.id}`, { enabled: false }], ['DELETE', `${base(team.teamId)}/${hook.id}`],
      ['POST', `${base(team.teamId)}/${hook.id}/rotate-secret`], ['GET', `${base(team.teamId)}/${hook.id}/deliveries`],
    ] as [string, string, unknown?][]) {
      expectError(t, await server.media(method, path, key, body === undefined ? {} : { body }), 403, 'error.forbidden');
    }
  }
  t.equal(await automationCount(team.teamId), 1);
  t.same((await server.media('GET', `${base(team.teamId)}/${hook.id}`, team.key)).body.enabled, true, 'unchanged');

  // The permission through a group counts, as for the media permissions.
  const viaGroup = await memberKey(server, team.teamId, 'grouped', []);
  expectError(t, await server.media('GET', base(team.teamId), viaGroup.key), 403, 'error.forbidden');
  const group = await server.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Hooks', permissions: ['team.automations.manage'] });
  await server.admin('POST', `/v1/admin/teams/${team.teamId}/members/${viaGroup.memberId}/groups`, { groupId: group.body.id });
  t.equal((await server.media('GET', base(team.teamId), viaGroup.key)).status, 200);
  expectError(t, await server.request('GET', base(team.teamId)), 401, 'error.unauthorized');
});

t.test('operator routes manage any team behind authSecret', async (t) => {
  const team = await server.createTeam('Operated');
  const admin = `/v1/admin/teams/${team.teamId}/automations`;
  expectError(t, await server.request('GET', admin), 401, 'error.unauthorized');
  expectError(t, await server.request('POST', admin, { body: { name: 'x', url: HOOK }, headers: { authSecret: 'wrong-secret-0123456789' } }), 401, 'error.unauthorized');
  expectError(t, await server.media('GET', admin, team.key), 401, 'error.unauthorized');
  const created = await server.admin('POST', admin, { name: 'Ops', url: HOOK });
  t.equal(created.status, 201);
  t.match(created.body, { teamId: team.teamId, secret: /^whsec_/ });
  t.equal((await server.media('GET', base(team.teamId), team.key)).body.count, 1, 'the team sees it');
  t.equal((await server.admin('PATCH', `${admin}/${created.body.id}`, { enabled: false })).body.enabled, false);
  t.equal((await server.admin('GET', `${admin}/${created.body.id}/deliveries`)).status, 200);
  t.equal((await server.admin('DELETE', `${admin}/${created.body.id}`)).status, 204);
  const logged = await logActions(team.teamId);
  t.same(logged.map((row) => [row.action, row.team_member_id]), [['AUTOMATION_CREATED', null], ['AUTOMATION_UPDATED', null], ['AUTOMATION_DELETED', null]]);
  expectError(t, await server.admin('GET', '/v1/admin/teams/00000000-0000-4000-8000-000000000000/automations'), 404, 'error.notFound');
  expectError(t, await server.admin('POST', '/v1/admin/teams/nope/automations', { name: 'x', url: HOOK }), 404, 'error.notFound');
});

t.test('the outbox: one media.uploaded event per successful upload, none for refused or aborted ones', async (t) => {
  const team = await server.createTeam('Outbox');
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxMediaFileSize: 2 * MiB });
  // The outbox is written for a team with an automation (the next test); its tag filter keeps anything from being delivered.
  t.equal((await server.admin('POST', `/v1/admin/teams/${team.teamId}/automations`, { name: 'Outbox', url: HOOK, tags: ['never'] })).status, 201);

  const multipart = await uploadMultipart(server, team.teamId, team.key, { content: pngLike(700), fileName: 'one.png' }, 'tags=a');
  const json = await uploadJson(server, team.teamId, team.key, { file: pngLike(500).toString('base64'), fileName: 'two.png' });
  t.equal(multipart.status, 201);
  t.equal(json.status, 201);
  t.equal(await eventCount(team.teamId), 2, 'one event per upload');
  const { rows } = await db.query<{ payload: any; occurred_at: Date }>(`select payload, occurred_at from media_event where team_id = $1 order by occurred_at`, [team.teamId]);
  t.same(rows.map((row) => row.payload.media.id), [multipart.body.id, json.body.id], 'each event carries its media record');
  t.match(rows[0]!.payload.media, { id: multipart.body.id, fileName: 'one.png', size: 700, tags: ['a'], publicUrl: multipart.body.publicUrl });

  const refused = [
    await uploadMultipart(server, team.teamId, team.key, { content: Buffer.from('<html><script>alert(1)</script></html>'), fileName: 'x.html' }),
    await uploadMultipart(server, team.teamId, team.key, { content: pngLike(3 * MiB), fileName: 'big.png' }),
    await uploadMultipart(server, team.teamId, team.key, { content: pngLike(100), fileName: 'tagged.png' }, 'tags=bad%20tag'),
    await uploadJson(server, team.teamId, team.key, { file: '!!!not base64!!!', fileName: 'bad.png' }),
  ];
  t.same(refused.map((response) => response.status), [415, 402, 400, 400]);

  // A client that goes away mid-body, from a body large enough to be reserved (past UNRESERVED_DECLARED_BYTES).
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxMediaFileSize: 8 * MiB });
  const held = heldUpload(server, team.teamId, team.key, pngLike(6 * MiB));
  held.request.on('error', () => undefined);
  held.response.catch(() => undefined);
  t.ok(await eventually(async () => (await teamStorageState(server.databaseUrl, team.teamId)).reservations === 1), 'the upload is under way');
  held.request.destroy();
  t.ok(await eventually(async () => (await teamStorageState(server.databaseUrl, team.teamId)).reservations === 0), 'the aborted upload is cleaned up');

  t.equal(await eventCount(team.teamId), 2, 'no event for refused or aborted uploads');
  const state = await teamStorageState(server.databaseUrl, team.teamId);
  t.equal(state.files, 2, 'as many events as files');
});

t.test('the outbox is written only while the team has an enabled automation for media.uploaded', async (t) => {
  const team = await server.createTeam('OutboxOnDemand');
  const upload = async (name: string) => t.equal((await uploadMultipart(server, team.teamId, team.key, { content: pngLike(300), fileName: name })).status, 201, name);
  await upload('before.png');
  t.equal(await eventCount(team.teamId), 0, 'no automation: no outbox row');

  const created = await server.admin('POST', `/v1/admin/teams/${team.teamId}/automations`, { name: 'Feed', url: HOOK, tags: ['never'], enabled: false });
  t.equal(created.status, 201);
  await upload('disabled.png');
  t.equal(await eventCount(team.teamId), 0, 'a disabled automation: none either');

  const id = created.body.id as string;
  t.equal((await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/automations/${id}`, { enabled: true })).status, 200);
  await upload('enabled.png');
  t.equal(await eventCount(team.teamId), 1, 'enabled: the next upload writes its row');

  t.equal((await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/automations/${id}`, { enabled: false })).status, 200);
  await upload('disabled-again.png');
  t.equal(await eventCount(team.teamId), 1, 'disabled again: none');

  t.equal((await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/automations/${id}`, { enabled: true })).status, 200);
  t.equal((await server.admin('DELETE', `/v1/admin/teams/${team.teamId}/automations/${id}`)).status, 204);
  await upload('deleted.png');
  t.equal(await eventCount(team.teamId), 1, 'deleted: none');
  const { rows } = await db.query<{ name: string }>(`select payload -> 'media' ->> 'fileName' as name from media_event where team_id = $1`, [team.teamId]);
  t.same(rows.map((row) => row.name), ['enabled.png']);
});
