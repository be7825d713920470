import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { expectError, startTestServer, type TestServer } from '../helpers/server.ts';

// A long cache lifetime proves invalidation, not expiry, makes changes take effect.
const server = await startTestServer(t, { settings: { API_KEY_CACHE_SECONDS: 3600 } });
const team = await server.createTeam('AuthTeam');
const otherTeam = await server.createTeam('OtherTeam');
const listPath = `/v1/cdn/media/${team.teamId}`;

async function memberKey(target: TestServer, teamId: string, name: string, permissions: string[], extra: Record<string, unknown> = {}) {
  const member = await target.admin('POST', `/v1/admin/teams/${teamId}/members`, { name, permissions });
  const key = await target.admin('POST', `/v1/admin/teams/${teamId}/api-keys`, { teamMemberId: member.body.id, ...extra });
  return { memberId: member.body.id as string, key: key.body.key as string, keyId: key.body.id as string };
}

t.test('a missing, malformed or unknown key is 401', async (t) => {
  expectError(t, await server.request('GET', listPath), 401, 'error.unauthorized');
  expectError(t, await server.request('GET', listPath, { headers: { authorization: 'Basic abc' } }), 401, 'error.unauthorized');
  expectError(t, await server.media('GET', listPath, 'not-a-key'), 401, 'error.unauthorized');
  const forged = team.key.slice(0, -4) + (team.key.endsWith('AAAA') ? 'BBBB' : 'AAAA');
  expectError(t, await server.media('GET', listPath, forged), 401, 'error.unauthorized');
  const unknownPrefix = 'tws_0123456789abcdef_' + 'A'.repeat(43);
  expectError(t, await server.media('GET', listPath, unknownPrefix), 401, 'error.unauthorized');
});

t.test('the owner key and "Bearer" in any case work', async (t) => {
  t.equal((await server.media('GET', listPath, team.key)).status, 200);
  const lower = await server.request('GET', listPath, { headers: { authorization: `bearer ${team.key}` } });
  t.equal(lower.status, 200);
});

t.test('a key of another team is 401, never the other team\'s data', async (t) => {
  const response = await server.media('GET', listPath, otherTeam.key);
  expectError(t, response, 401, 'error.unauthorized');
  t.notMatch(JSON.stringify(response.body), team.teamId);
});

t.test('mistyped paths: an empty or non-UUID team id is a 404 naming it; an unknown route under the media base is "no such route"', async (t) => {
  for (const [method, path, teamId] of [
    ['POST', '/v1/cdn/media//upload', ''],
    ['POST', '/v1/cdn/media//upload/file', ''],
    ['GET', '/v1/cdn/media/not-a-uuid', 'not-a-uuid'],
    ['POST', '/v1/cdn/media/not-a-uuid/upload-urls', 'not-a-uuid'],
    ['POST', '/v1/cdn/media/not-a-uuid/tus', 'not-a-uuid'],
  ] as const) {
    for (const key of [team.key, 'not-a-key']) {
      const response = await server.media(method, path, key, method === 'GET' ? {} : { body: {} });
      expectError(t, response, 404, 'error.notFound');
      t.equal(response.body.value, teamId, `${method} ${path}: names the team id`);
      t.match(response.body.message, `Could not find team "${teamId}": a team id is a UUID`);
    }
  }
  for (const path of [`${listPath}/list`, `${listPath}/files`, `${listPath}/upload/files`, `${listPath}/folders/x/y`]) {
    const response = await server.media('GET', path, team.key);
    expectError(t, response, 404, 'error.notFound');
    t.match(response.body.message, `There is no such route: GET ${path}`, path);
  }
  const unknownFile = await server.media('GET', `${listPath}/00000000-0000-4000-8000-000000000000`, team.key);
  expectError(t, unknownFile, 404, 'error.notFound');
  t.equal(unknownFile.body.message, 'Could not find media file', 'a media id that names no file is still that');
});

t.test('a member without team.media.view is 403', async (t) => {
  const { key } = await memberKey(server, team.teamId, 'uploader_only', ['team.media.upload']);
  expectError(t, await server.media('GET', listPath, key), 403, 'error.forbidden');
});

t.test('a member with team.media.view may list', async (t) => {
  const { key } = await memberKey(server, team.teamId, 'viewer', ['team.media.view']);
  t.equal((await server.media('GET', listPath, key)).status, 200);
});

t.test('a key scoped to media:upload cannot list, even for the owner', async (t) => {
  const scoped = await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, { scopes: ['media:upload'] });
  expectError(t, await server.media('GET', listPath, scoped.body.key), 403, 'error.forbidden');
});

t.test('permissions of the member\'s groups count, and joining a group takes effect at once', async (t) => {
  const group = await server.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Viewers', permissions: ['team.media.view'] });
  const { memberId, key } = await memberKey(server, team.teamId, 'grouped', []);
  expectError(t, await server.media('GET', listPath, key), 403, 'error.forbidden');
  await server.admin('POST', `/v1/admin/teams/${team.teamId}/members/${memberId}/groups`, { groupId: group.body.id });
  t.equal((await server.media('GET', listPath, key)).status, 200, 'cached denial replaced at once');
});

t.test('a key linked to the owner member acts as the owner', async (t) => {
  const key = await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, { teamMemberId: team.ownerId });
  t.equal((await server.media('GET', listPath, key.body.key)).status, 200);
});

t.test('reroll and delete take effect at once for a cached key', async (t) => {
  const created = await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, {});
  t.equal((await server.media('GET', listPath, created.body.key)).status, 200, 'now cached');
  const rerolled = await server.admin('POST', `/v1/admin/api-keys/${created.body.id}/reroll`);
  expectError(t, await server.media('GET', listPath, created.body.key), 401, 'error.unauthorized');
  t.equal((await server.media('GET', listPath, rerolled.body.key)).status, 200);
  await server.admin('DELETE', `/v1/admin/api-keys/${created.body.id}`);
  expectError(t, await server.media('GET', listPath, rerolled.body.key), 401, 'error.unauthorized');
});

t.test('reroll and delete on one instance reach the cache of another', async (t) => {
  const second = await startTestServer(t, { databaseUrl: server.databaseUrl, settings: { API_KEY_CACHE_SECONDS: 3600 } });
  const created = await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, {});
  t.equal((await second.media('GET', listPath, created.body.key)).status, 200, 'cached on the second instance');

  await server.admin('POST', `/v1/admin/api-keys/${created.body.id}/reroll`);
  let status = 0;
  // NOTIFY arrives asynchronously after commit; allow it a moment, bounded.
  for (let attempt = 0; attempt < 50; attempt++) {
    status = (await second.media('GET', listPath, created.body.key)).status;
    if (status === 401) break;
    await sleep(20);
  }
  t.equal(status, 401, 'the old secret stops working on the other instance');
});

t.test('paging headers are validated', async (t) => {
  t.equal((await server.media('GET', listPath, team.key, { headers: { pageNumber: '2', pageSize: '10' } })).status, 200);
  expectError(t, await server.media('GET', listPath, team.key, { headers: { pageSize: '0' } }), 400, 'error.badRequest');
  expectError(t, await server.media('GET', listPath, team.key, { headers: { pageSize: '100000' } }), 400, 'error.badRequest');
  expectError(t, await server.media('GET', listPath, team.key, { headers: { pageNumber: 'x' } }), 400, 'error.badRequest');
});
