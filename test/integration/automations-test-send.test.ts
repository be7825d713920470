import t from 'tap';
import { verifySignature } from '../../src/domain/automations/signature.ts';
import { expectError, startTestServer } from '../helpers/server.ts';
import { eventually } from '../helpers/wait.ts';
import { startWebhookReceiver } from '../helpers/webhook-receiver.ts';

// POST /v1/teams/{teamId}/automations/{id}/test: one test message to one target, through the real
// dispatcher to a real receiver on 127.0.0.1, followed in the delivery list.

const server = await startTestServer(t, {
  settings: {
    RATE_LIMIT_POINTS: 100_000,
    AUTOMATION_ALLOW_PRIVATE_TARGETS: true,
    AUTOMATION_DISPATCH_INTERVAL_MS: 200,
    AUTOMATION_MAX_ATTEMPTS: 2,
    AUTOMATION_BACKOFF_BASE_MS: 20,
    AUTOMATION_BACKOFF_MAX_MS: 40,
  },
});

async function createAutomation(teamId: string, key: string, body: Record<string, unknown>) {
  const response = await server.media('POST', `/v1/teams/${teamId}/automations`, key, { body: { name: 'hook', ...body } });
  if (response.status !== 201) throw new Error(`automation creation failed: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body as { id: string; secret: string };
}

t.test('a test message goes to that target only, signed, and shows in its delivery list', async (t) => {
  const receiver = await startWebhookReceiver(t);
  const other = await startWebhookReceiver(t);
  const team = await server.createTeam('Tester');
  const automation = await createAutomation(team.teamId, team.key, { name: 'Match <bot>', url: `${receiver.url}/hook` });
  await createAutomation(team.teamId, team.key, { name: 'other', url: `${other.url}/hook` });

  const queued = await server.media('POST', `/v1/teams/${team.teamId}/automations/${automation.id}/test`, team.key);
  t.equal(queued.status, 201);
  t.match(queued.body, { automationId: automation.id, eventKind: 'automation.test', mediaId: null, status: 'pending', attempts: 0 });
  t.ok(await eventually(() => receiver.requests.length === 1), 'the receiver gets the test');
  const [request] = receiver.requests;
  t.equal(request!.headers['x-media-event'], 'automation.test');
  t.equal(request!.headers['x-media-delivery-id'], queued.body.id, 'as the delivery the route answered');
  t.ok(verifySignature(automation.secret, request!.body, String(request!.headers['x-media-signature'])), 'signed with the target\'s secret');
  t.match(request!.json, { kind: 'automation.test', teamId: team.teamId, data: { automation: { id: automation.id, name: 'Match <bot>' } } });

  const listed = await server.media('GET', `/v1/teams/${team.teamId}/automations/${automation.id}/deliveries`, team.key);
  t.ok(await eventually(async () => (await server.media('GET', `/v1/teams/${team.teamId}/automations/${automation.id}/deliveries`, team.key)).body.data[0]?.status === 'delivered'));
  const delivered = (await server.media('GET', `/v1/teams/${team.teamId}/automations/${automation.id}/deliveries`, team.key)).body;
  t.equal(listed.body.count, 1);
  t.match(delivered.data[0], { id: queued.body.id, status: 'delivered', attempts: 1, lastStatus: 200 });
  t.equal(other.requests.length, 0, 'the other target of the team gets nothing');
});

t.test('a failing receiver: the test delivery fails with its status, like any delivery', async (t) => {
  const receiver = await startWebhookReceiver(t, () => 500);
  const team = await server.createTeam('Failing');
  const automation = await createAutomation(team.teamId, team.key, { url: `${receiver.url}/hook` });
  const queued = await server.media('POST', `/v1/teams/${team.teamId}/automations/${automation.id}/test`, team.key);
  t.equal(queued.status, 201);
  const path = `/v1/teams/${team.teamId}/automations/${automation.id}/deliveries`;
  t.ok(await eventually(async () => (await server.media('GET', path, team.key)).body.data[0]?.status === 'failed'));
  t.match((await server.media('GET', path, team.key)).body.data[0], { status: 'failed', attempts: 2, lastStatus: 500 });
  t.equal(receiver.requests.length, 2, 'every attempt reached the receiver');
});

t.test('a discord target gets a test message of its own', async (t) => {
  const receiver = await startWebhookReceiver(t);
  const team = await server.createTeam('DiscordTest');
  const automation = await createAutomation(team.teamId, team.key, { kind: 'discord', name: 'alerts_*bold*', url: `${receiver.url}/api/webhooks/1/token` });
  t.equal((await server.media('POST', `/v1/teams/${team.teamId}/automations/${automation.id}/test`, team.key)).status, 201);
  t.ok(await eventually(() => receiver.requests.length === 1));
  t.match(receiver.requests[0]!.json, { content: 'Test message for the automation **alerts\\_\\*bold\\***: this channel receives the team\'s events.', embeds: [], allowed_mentions: { parse: [] } });
});

t.test('refusals: a disabled target 409, another team\'s or an unknown automation 404, no permission 403', async (t) => {
  const receiver = await startWebhookReceiver(t);
  const team = await server.createTeam('Refused');
  const stranger = await server.createTeam('Stranger');
  const automation = await createAutomation(team.teamId, team.key, { url: `${receiver.url}/hook`, enabled: false });
  const disabled = await server.media('POST', `/v1/teams/${team.teamId}/automations/${automation.id}/test`, team.key);
  expectError(t, disabled, 409, 'error.conflict');
  t.equal(disabled.body.value, 'disabled');
  expectError(t, await server.media('POST', `/v1/teams/${stranger.teamId}/automations/${automation.id}/test`, stranger.key), 404, 'error.notFound');
  expectError(t, await server.media('POST', `/v1/teams/${team.teamId}/automations/00000000-0000-4000-8000-000000000000/test`, team.key), 404, 'error.notFound');
  const member = await server.admin('POST', `/v1/admin/teams/${team.teamId}/members`, { name: 'viewer', permissions: ['team.media.view'] });
  const viewer = await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, { teamMemberId: member.body.id });
  expectError(t, await server.media('POST', `/v1/teams/${team.teamId}/automations/${automation.id}/test`, viewer.body.key), 403, 'error.forbidden');
  const deliveries = await server.media('GET', `/v1/teams/${team.teamId}/automations/${automation.id}/deliveries`, team.key);
  t.equal(deliveries.body.count, 0, 'nothing was queued');
  t.equal(receiver.requests.length, 0);
});
