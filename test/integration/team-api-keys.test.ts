import t from 'tap';
import { expectError, startTestServer } from '../helpers/server.ts';
import { memberWithKey, tableSnapshot, teamLogRows } from '../helpers/team-admin.ts';

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
const team = await server.createTeam('Keys');
const base = `/v1/teams/${team.teamId}`;
const keyManager = await memberWithKey(server, team.teamId, 'keyManager', ['team.apiKeys.manage', 'team.media.view']);
const viewer = await memberWithKey(server, team.teamId, 'viewer', ['team.media.view']);
const stronger = await memberWithKey(server, team.teamId, 'stronger', ['team.media.view', 'team.media.delete']);
const keyRows = () => tableSnapshot(server, 'select id, prefix, secret_hash from api_key where team_id = $1 order by id', [team.teamId]);
const lastLog = async () => (await teamLogRows(server, team.teamId)).at(-1)!;
const media = `/v1/cdn/media/${team.teamId}`;

t.test('list: ApiKeyInfo of every key, never a secret', async (t) => {
  const list = await server.media('GET', `${base}/api-keys`, keyManager.key);
  t.equal(list.status, 200);
  t.equal(list.body.length, 4);
  for (const info of list.body) t.notOk('key' in info, 'no secret');
  t.match(list.body.find((info: any) => info.id === viewer.keyId), { teamMemberId: viewer.memberId, teamMember: { id: viewer.memberId, name: 'viewer' }, scopes: [] });
});

t.test('create: answers the key once, logs API_KEY_CREATED; the new key works', async (t) => {
  const created = await server.media('POST', `${base}/api-keys`, keyManager.key, { body: { description: 'ci', teamMemberId: viewer.memberId, scopes: ['media:upload'] } });
  t.equal(created.status, 201);
  t.match(created.body, { teamId: team.teamId, description: 'ci', teamMemberId: viewer.memberId, scopes: ['media:upload'], key: /^tws_/ });
  t.match(await lastLog(), { action: 'API_KEY_CREATED', team_member_id: keyManager.memberId, target_team_member_id: viewer.memberId, target_identifier: created.body.id });
  const plain = await server.media('POST', `${base}/api-keys`, keyManager.key, { body: { teamMemberId: viewer.memberId } });
  t.equal((await server.media('GET', media, plain.body.key)).status, 200);
});

t.test('a key never gets permissions its creator lacks (403, nothing created)', async (t) => {
  const before = await keyRows();
  const ownerKey = await server.media('POST', `${base}/api-keys`, keyManager.key, { body: {} });
  expectError(t, ownerKey, 403, 'error.forbidden');
  expectError(t, await server.media('POST', `${base}/api-keys`, keyManager.key, { body: { teamMemberId: stronger.memberId } }), 403, 'error.forbidden');
  expectError(t, await server.media('POST', `${base}/api-keys`, keyManager.key, { body: { teamMemberId: team.ownerId } }), 403, 'error.forbidden');
  t.equal(await keyRows(), before);
  // Group permissions count too.
  const group = (await server.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Deleters', permissions: ['team.media.delete'] })).body;
  await server.admin('POST', `/v1/admin/teams/${team.teamId}/members/${viewer.memberId}/groups`, { groupId: group.id });
  expectError(t, await server.media('POST', `${base}/api-keys`, keyManager.key, { body: { teamMemberId: viewer.memberId } }), 403, 'error.forbidden');
  t.equal((await server.media('POST', `${base}/api-keys`, team.key, { body: { teamMemberId: stronger.memberId } })).status, 201, 'the owner may');
  expectError(t, await server.media('POST', `${base}/api-keys/${team.keyId}/reroll`, keyManager.key), 403, 'error.forbidden');
  expectError(t, await server.media('DELETE', `${base}/api-keys/${stronger.keyId}`, keyManager.key), 403, 'error.forbidden');
  t.equal((await server.media('GET', media, team.key)).status, 200, 'the owner key still works');
});

t.test('create validation: 400 / 404 and nothing created', async (t) => {
  const before = await keyRows();
  for (const body of [{ description: 'x'.repeat(256) }, { teamMemberId: 'nope' }, { scopes: ['media:delete'] }, { scopes: 'media:upload' }, { secret: 'mine' }, [1]]) {
    expectError(t, await server.media('POST', `${base}/api-keys`, team.key, { body }), 400, 'error.badRequest');
  }
  expectError(t, await server.media('POST', `${base}/api-keys`, team.key, { body: { teamMemberId: '00000000-0000-4000-8000-000000000000' } }), 404, 'error.notFound');
  t.equal(await keyRows(), before);
});

t.test('reroll: a new secret; the old one stops at once', async (t) => {
  const own = await server.media('POST', `${base}/api-keys`, team.key, { body: { teamMemberId: keyManager.memberId } });
  t.equal((await server.media('GET', media, own.body.key)).status, 200, 'works (and is cached)');
  const rerolled = await server.media('POST', `${base}/api-keys/${own.body.id}/reroll`, keyManager.key);
  t.equal(rerolled.status, 200);
  t.equal(rerolled.body.id, own.body.id);
  t.not(rerolled.body.key, own.body.key);
  expectError(t, await server.media('GET', media, own.body.key), 401, 'error.unauthorized');
  t.equal((await server.media('GET', media, rerolled.body.key)).status, 200);
  expectError(t, await server.media('POST', `${base}/api-keys/00000000-0000-4000-8000-000000000000/reroll`, team.key), 404, 'error.notFound');
});

t.test('delete: API_KEY_DELETED; the key stops at once', async (t) => {
  const doomed = await server.media('POST', `${base}/api-keys`, team.key, { body: { teamMemberId: keyManager.memberId, description: 'doomed' } });
  t.equal((await server.media('GET', media, doomed.body.key)).status, 200);
  t.equal((await server.media('DELETE', `${base}/api-keys/${doomed.body.id}`, keyManager.key)).status, 204);
  t.match(await lastLog(), { action: 'API_KEY_DELETED', team_member_id: keyManager.memberId, target_identifier: doomed.body.id, data: { description: 'doomed' } });
  expectError(t, await server.media('GET', media, doomed.body.key), 401, 'error.unauthorized');
  expectError(t, await server.media('DELETE', `${base}/api-keys/${doomed.body.id}`, keyManager.key), 404, 'error.notFound');
});

t.test('every key route needs team.apiKeys.manage and a full key', async (t) => {
  const before = await keyRows();
  const uploader = await memberWithKey(server, team.teamId, 'uploader', ['team.apiKeys.manage', 'team.media.upload'], { scopes: ['media:upload'] });
  const after = await keyRows();
  for (const key of [viewer.key, uploader.key]) {
    for (const [method, path] of [['GET', `${base}/api-keys`], ['POST', `${base}/api-keys`], ['POST', `${base}/api-keys/${viewer.keyId}/reroll`], ['DELETE', `${base}/api-keys/${viewer.keyId}`]] as const) {
      expectError(t, await server.media(method, path, key, method === 'GET' ? {} : { body: {} }), 403, 'error.forbidden');
    }
  }
  t.not(before, after);
  t.equal(await keyRows(), after, 'nothing changed');
});
