import t from 'tap';
import { expectError, startTestServer } from '../helpers/server.ts';
import { tableSnapshot } from '../helpers/team-admin.ts';

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
let counter = 0;

async function person(): Promise<{ token: string; userId: string }> {
  const n = ++counter;
  const response = await server.request('POST', '/v1/auth/sign-up', { body: { email: `n${n}@example.com`, username: `notified_${n}`, password: 'a long pass phrase' } });
  return { token: response.body.token, userId: response.body.user.id };
}

const settings = (token: string) => server.media('GET', '/v1/users/me/notification-settings', token);
const update = (token: string, preferences: unknown) => server.media('PUT', '/v1/users/me/notification-settings', token, { body: { preferences } });
const pick = (body: any, topic: string, channel: string) => body.preferences.find((p: any) => p.topic === topic && p.channel === channel);

t.test('defaults: all nine pairs, only SYSTEM by EMAIL on, no consent recorded', async (t) => {
  const user = await person();
  const answer = await settings(user.token);
  t.equal(answer.status, 200);
  t.equal(answer.body.preferences.length, 9);
  t.same(answer.body.preferences.filter((p: any) => p.enabled).map((p: any) => `${p.topic}:${p.channel}`), ['SYSTEM:EMAIL']);
  t.ok(answer.body.preferences.every((p: any) => p.confirmedAt === null));
});

t.test('turning a topic on records consent; off withdraws it; frequency kept; other users untouched', async (t) => {
  const user = await person();
  const other = await person();
  const on = await update(user.token, [{ topic: 'MARKETING', channel: 'EMAIL', enabled: true }, { topic: 'PRODUCT_UPDATES', channel: 'DISCORD', enabled: true, frequency: 'DAILY' }]);
  t.equal(on.status, 200);
  const marketing = pick(on.body, 'MARKETING', 'EMAIL');
  t.match(marketing, { enabled: true, frequency: 'MONTHLY', confirmedAt: String });
  t.match(pick(on.body, 'PRODUCT_UPDATES', 'DISCORD'), { enabled: true, frequency: 'DAILY', confirmedAt: String });
  const again = await update(user.token, [{ topic: 'MARKETING', channel: 'EMAIL', frequency: 'WEEKLY' }]);
  t.match(pick(again.body, 'MARKETING', 'EMAIL'), { enabled: true, frequency: 'WEEKLY', confirmedAt: marketing.confirmedAt }, 'consent keeps its moment');
  const off = await update(user.token, [{ topic: 'MARKETING', channel: 'EMAIL', enabled: false }]);
  t.match(pick(off.body, 'MARKETING', 'EMAIL'), { enabled: false, frequency: 'WEEKLY', confirmedAt: null });
  t.match(pick((await settings(user.token)).body, 'PRODUCT_UPDATES', 'DISCORD'), { enabled: true, frequency: 'DAILY' });
  t.equal(pick((await settings(other.token)).body, 'MARKETING', 'EMAIL').enabled, false);
  const system = await update(user.token, [{ topic: 'SYSTEM', channel: 'PUSH', enabled: true }]);
  t.match(pick(system.body, 'SYSTEM', 'PUSH'), { enabled: true, confirmedAt: null }, 'SYSTEM is no consent');
});

t.test('refusals change nothing', async (t) => {
  const user = await person();
  const before = await tableSnapshot(server, 'select * from notification_preference where user_id = $1 order by topic, channel', [user.userId]);
  expectError(t, await update(user.token, [{ topic: 'SYSTEM', channel: 'EMAIL', enabled: false }]), 400, 'error.badRequest');
  expectError(t, await update(user.token, [{ topic: 'MARKETING', channel: 'EMAIL', enabled: true }, { topic: 'SYSTEM', channel: 'EMAIL', frequency: 'MUTE' }]), 400, 'error.badRequest');
  expectError(t, await update(user.token, [{ topic: 'MARKETING', channel: 'EMAIL', enabled: true }, { topic: 'MARKETING', channel: 'EMAIL', enabled: false }]), 400, 'error.badRequest');
  expectError(t, await update(user.token, [{ topic: 'NEWS', channel: 'EMAIL', enabled: true }]), 400, 'error.badRequest');
  expectError(t, await update(user.token, [{ topic: 'MARKETING', channel: 'SMS', enabled: true }]), 400, 'error.badRequest');
  expectError(t, await update(user.token, [{ topic: 'MARKETING', channel: 'EMAIL', confirmedAt: new Date().toISOString() }]), 400, 'error.badRequest');
  expectError(t, await server.media('PUT', '/v1/users/me/notification-settings', user.token, { body: {} }), 400, 'error.missingArgument.preferences');
  t.equal(await tableSnapshot(server, 'select * from notification_preference where user_id = $1 order by topic, channel', [user.userId]), before);
  const team = await server.createTeam('Keyed');
  expectError(t, await settings(team.key), 401, 'error.unauthorized');
});
