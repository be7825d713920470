import t from 'tap';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { memberWithKey } from '../helpers/team-admin.ts';
import { eventually } from '../helpers/wait.ts';

// Two instances of one deployment, keys cached for an hour on both: a change made through one
// instance holds on the other's next requests (the auth_changes NOTIFY drops its cached keys), not
// an hour later. The notification arrives a moment after the commit, so the other instance is
// polled, bounded far below the cache lifetime.
const settings = { RATE_LIMIT_POINTS: 100_000, API_KEY_CACHE_SECONDS: 3600 };
const first = await startTestServer(t, { settings });
const second = await startTestServer(t, { settings, databaseUrl: first.databaseUrl });
const team = await first.createTeam('TwoGroups');
const T = `/v1/teams/${team.teamId}`;

async function statusOn(server: TestServer, key: string, path = `${T}/members`): Promise<number> {
  return (await server.media('GET', path, key)).status;
}
const becomes = (server: TestServer, key: string, status: number, path?: string) => eventually(async () => (await statusOn(server, key, path)) === status, 5000);

t.test('a permission given or taken through a group holds at once for the member\'s keys on the other instance', async (t) => {
  const group = (await first.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Viewers', permissions: [] })).body;
  const member = await memberWithKey(first, team.teamId, 'viewer', [], { groupIds: [group.id] });
  t.equal(await statusOn(second, member.key), 403, 'cached on the second instance without the permission');

  t.equal((await first.media('PATCH', `${T}/groups/${group.id}`, team.key, { body: { permissions: ['team.members.view'] } })).status, 200);
  t.ok(await becomes(second, member.key, 200), 'the group\'s new permission holds on the second instance');

  t.equal((await first.media('DELETE', `${T}/groups/${group.id}/members/${member.memberId}`, team.key)).status, 204);
  t.ok(await becomes(second, member.key, 403), 'out of the group: the permission is gone there too');

  t.equal((await first.media('PUT', `${T}/members/${member.memberId}/groups`, team.key, { body: { groupIds: [group.id] } })).status, 200);
  t.ok(await becomes(second, member.key, 200), 'back in the group');

  t.equal((await first.media('PATCH', `${T}/groups/${group.id}`, team.key, { body: { permissions: [] } })).status, 200);
  t.ok(await becomes(second, member.key, 403), 'the group loses the permission');

  t.equal((await first.media('PATCH', `${T}/groups/${group.id}`, team.key, { body: { permissions: ['team.members.view'] } })).status, 200);
  t.ok(await becomes(second, member.key, 200));
  t.equal((await first.media('DELETE', `${T}/groups/${group.id}`, team.key)).status, 204);
  t.ok(await becomes(second, member.key, 403), 'the group deleted: its permissions go with it');
});

t.test('archiving on one instance stops changes through the other at once; unarchiving lets them through again', async (t) => {
  const member = await memberWithKey(first, team.teamId, 'changer', ['team.settings.manage']);
  const rename = (name: string) => second.media('PATCH', T, member.key, { body: { name } });
  t.equal((await rename('Before')).status, 200, 'cached on the second instance, team active');
  t.equal((await first.media('POST', `${T}/archive`, team.key)).status, 200);
  t.ok(await eventually(async () => (await rename('During')).status === 403, 5000), 'refused on the second instance');
  t.equal((await rename('During')).body.messageKey, 'error.team.archived');
  t.equal((await first.media('POST', `${T}/unarchive`, team.key)).status, 200);
  t.ok(await eventually(async () => (await rename('After')).status === 200, 5000), 'allowed again');
});
