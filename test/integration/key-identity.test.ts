import t from 'tap';
import { allPermissions } from '../../src/auth/permissions.ts';
import { bearer, signUp } from '../helpers/accounts.ts';
import { expectError, startTestServer } from '../helpers/server.ts';
import { memberWithKey } from '../helpers/team-admin.ts';

// GET /v1/auth/key over real HTTP: a key finds its team and what it may do (the dashboard's key
// sign-in needs nothing else); keys that do not work and session tokens are refused with 401.

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
const team = await server.createTeam('Whoami');
const base = `/v1/teams/${team.teamId}`;
const whoAmI = (key: string) => server.media('GET', '/v1/auth/key', key);

t.test('a key linked to no member: its team, id, description, and every permission (it acts as the owner)', async (t) => {
  const answer = await whoAmI(team.key);
  t.equal(answer.status, 200);
  t.match(answer.body, { id: team.keyId, teamId: team.teamId, teamMemberId: null, teamMember: null, scopes: [] });
  t.same(answer.body.permissions, [...allPermissions].sort());
  t.notOk('key' in answer.body, 'never the secret');
  t.equal(answer.headers.get('ratelimit-limit'), '100000', 'the key\'s rate limit headers');
});

t.test('a member\'s key: its description, member, and the member\'s own and groups\' permissions', async (t) => {
  const group = (await server.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Editors', permissions: ['team.media.edit'] })).body;
  const member = await memberWithKey(server, team.teamId, 'editor', ['team.media.view'], { groupIds: [group.id] });
  const described = await server.media('POST', `${base}/api-keys`, team.key, { body: { description: 'build server', teamMemberId: member.memberId } });
  t.equal(described.status, 201);
  const answer = await whoAmI(described.body.key);
  t.equal(answer.status, 200);
  t.match(answer.body, { id: described.body.id, teamId: team.teamId, description: 'build server', teamMemberId: member.memberId, teamMember: { id: member.memberId, name: 'editor' } });
  t.same(answer.body.permissions, ['team.media.edit', 'team.media.view']);

  const uploadOnly = await memberWithKey(server, team.teamId, 'uploader', ['team.media.upload'], { scopes: ['media:upload'] });
  const narrowed = await whoAmI(uploadOnly.key);
  t.equal(narrowed.status, 200, 'a key narrowed by a scope may ask what it is');
  t.match(narrowed.body, { id: uploadOnly.keyId, scopes: ['media:upload'], permissions: ['team.media.upload'] });
});

t.test('a rerolled, deleted or kicked member\'s key is 401, as are unknown keys and a missing header', async (t) => {
  const member = await memberWithKey(server, team.teamId, 'rotating', ['team.media.view']);
  t.equal((await whoAmI(member.key)).status, 200, 'works (and is cached)');
  const rerolled = await server.media('POST', `${base}/api-keys/${member.keyId}/reroll`, team.key);
  t.equal(rerolled.status, 200);
  expectError(t, await whoAmI(member.key), 401, 'error.unauthorized');
  t.equal((await whoAmI(rerolled.body.key)).status, 200, 'the new secret works');
  t.equal((await server.media('DELETE', `${base}/api-keys/${member.keyId}`, team.key)).status, 204);
  expectError(t, await whoAmI(rerolled.body.key), 401, 'error.unauthorized');

  const kicked = await memberWithKey(server, team.teamId, 'kicked', ['team.media.view']);
  t.equal((await server.media('DELETE', `${base}/members/${kicked.memberId}`, team.key)).status, 204);
  expectError(t, await whoAmI(kicked.key), 401, 'error.unauthorized');

  const unknown = `${team.key.slice(0, -4)}AAAA`;
  expectError(t, await whoAmI(unknown), 401, 'error.unauthorized');
  expectError(t, await whoAmI(`tws_0123456789abcdef_${'A'.repeat(43)}`), 401, 'error.unauthorized');
  expectError(t, await whoAmI('not-a-key'), 401, 'error.unauthorized');
  expectError(t, await server.request('GET', '/v1/auth/key'), 401, 'error.unauthorized');
});

t.test('a session token is not a key: 401, with where a user finds its teams', async (t) => {
  const user = await signUp(server);
  const answer = await server.request('GET', '/v1/auth/key', { headers: bearer(user.token) });
  expectError(t, answer, 401, 'error.unauthorized');
  t.match(answer.body.message, /session token.*\/v1\/users\/me\/teams/);
  t.equal((await server.request('GET', '/v1/users/me', { headers: bearer(user.token) })).status, 200, 'the session itself still works');
});
