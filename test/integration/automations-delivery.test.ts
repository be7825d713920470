import t from 'tap';
import { connectPg } from '../helpers/database.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { pngLike, uploadJson, uploadMultipart } from '../helpers/uploads.ts';
import { eventually, sleep } from '../helpers/wait.ts';
import { startWebhookReceiver, type ReceivedWebhook } from '../helpers/webhook-receiver.ts';
import { verifySignature } from '../../src/domain/automations/signature.ts';
import { createHmac } from 'node:crypto';

// Deliveries against real HTTP receivers on 127.0.0.1: signature, payload, retries with backoff,
// failure after the last attempt, manual retry, order per target, filters, the discord format.
// Backoff in tens of milliseconds; assertions wait for states, never for times.

const MAX_ATTEMPTS = 3;
const server = await startTestServer(t, {
  settings: {
    RATE_LIMIT_POINTS: 100_000,
    AUTOMATION_ALLOW_PRIVATE_TARGETS: true,
    AUTOMATION_DISPATCH_INTERVAL_MS: 200,
    AUTOMATION_DELIVERY_TIMEOUT_MS: 2000,
    AUTOMATION_MAX_ATTEMPTS: MAX_ATTEMPTS,
    AUTOMATION_BACKOFF_BASE_MS: 20,
    AUTOMATION_BACKOFF_MAX_MS: 80,
  },
});
const db = await connectPg(server.databaseUrl);
t.teardown(() => db.end());

async function createAutomation(target: TestServer, teamId: string, key: string, body: Record<string, unknown>) {
  const response = await target.media('POST', `/v1/teams/${teamId}/automations`, key, { body: { name: 'hook', ...body } });
  if (response.status !== 201) throw new Error(`automation creation failed: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body as { id: string; secret: string; url: string };
}

async function deliveries(automationId: string, client = db) {
  const { rows } = await client.query<{ id: string; event_id: string; status: string; attempts: number; last_error: string | null; last_status: number | null }>(
    'select id, event_id, status, attempts, last_error, last_status from automation_delivery where automation_id = $1 order by seq',
    [automationId],
  );
  return rows;
}

async function allDelivered(automationId: string, count: number, client = db): Promise<boolean> {
  const rows = await deliveries(automationId, client);
  return rows.length === count && rows.every((row) => row.status === 'delivered');
}

function eventIds(requests: ReceivedWebhook[]): string[] {
  return requests.map((request) => String(request.headers['x-media-event-id']));
}

t.test('an upload is delivered once, signed, with the documented payload', async (t) => {
  const receiver = await startWebhookReceiver(t);
  const team = await server.createTeam('Signed');
  const automation = await createAutomation(server, team.teamId, team.key, { url: `${receiver.url}/hooks/media` });
  t.match(automation.secret, /^whsec_[A-Za-z0-9_-]{43}$/);

  const upload = await uploadMultipart(server, team.teamId, team.key, { content: pngLike(1500), fileName: 'shot.png' }, 'tags=map:de_dust2,round:3');
  t.equal(upload.status, 201);
  t.ok(await eventually(() => allDelivered(automation.id, 1)), 'the delivery is marked delivered');
  t.equal(receiver.requests.length, 1, 'the receiver got exactly one request');
  const [request] = receiver.requests;
  t.equal(request!.path, '/hooks/media');
  t.equal(request!.headers['content-type'], 'application/json');
  t.equal(request!.headers['x-media-event'], 'media.uploaded');
  t.equal(request!.headers['x-media-delivery-attempt'], '1');
  const [row] = await deliveries(automation.id);
  t.equal(request!.headers['x-media-delivery-id'], row!.id, 'the idempotency id is the delivery id');
  t.equal(request!.headers['x-media-event-id'], row!.event_id);

  // The signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">, keyed with the secret.
  const header = String(request!.headers['x-media-signature']);
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
  t.ok(match, `signature header ${header}`);
  const expected = createHmac('sha256', automation.secret).update(`${match![1]}.${request!.body}`).digest('hex');
  t.equal(match![2], expected, 'HMAC of "<t>.<body>" with the secret');
  t.ok(verifySignature(automation.secret, request!.body, header), 'verifySignature accepts it');
  t.notOk(verifySignature('whsec_wrong', request!.body, header), 'another secret does not verify');
  t.notOk(verifySignature(automation.secret, `${request!.body} `, header), 'a changed body does not verify');

  t.same(request!.json, {
    id: row!.event_id,
    kind: 'media.uploaded',
    occurredAt: request!.json.occurredAt,
    teamId: team.teamId,
    data: {
      media: {
        id: upload.body.id,
        fileName: 'shot.png',
        path: upload.body.path,
        publicUrl: upload.body.publicUrl,
        public: true,
        size: 1500,
        contentType: 'image/png',
        hash: upload.body.hash,
        folderId: null,
        tags: ['map:de_dust2', 'round:3'],
        createdAt: upload.body.createdAt,
      },
    },
  });
  t.match(request!.json.occurredAt, /^\d{4}-\d\d-\d\dT/);

  // Nothing more arrives later: delivered means done.
  await sleep(300);
  t.equal(receiver.requests.length, 1, 'still one request');
});

t.test('receiver down, then up: delivered after retries', async (t) => {
  // Attempts enough that the receiver is surely back before they run out.
  // Its own database: max attempts is an instance setting, and any instance of a database may take a delivery.
  const patient = await startTestServer(t, {
    settings: {
      AUTOMATION_ALLOW_PRIVATE_TARGETS: true, AUTOMATION_MAX_ATTEMPTS: 100, AUTOMATION_BACKOFF_BASE_MS: 20, AUTOMATION_BACKOFF_MAX_MS: 100,
      AUTOMATION_DISPATCH_INTERVAL_MS: 200,
    },
  });
  const patientDb = await connectPg(patient.databaseUrl);
  t.teardown(() => patientDb.end());
  const receiver = await startWebhookReceiver(t);
  const team = await patient.createTeam('DownUp');
  const automation = await createAutomation(patient, team.teamId, team.key, { url: receiver.url });
  await receiver.stop();

  const upload = await uploadJson(patient, team.teamId, team.key, { file: pngLike(300).toString('base64'), fileName: 'a.png' });
  t.equal(upload.status, 201);
  t.ok(await eventually(async () => ((await deliveries(automation.id, patientDb))[0]?.attempts ?? 0) >= 2), 'attempts fail while the receiver is down');
  const [failing] = await deliveries(automation.id, patientDb);
  t.match(failing!.last_error, /connection refused/);
  t.equal(failing!.last_status, null, 'no HTTP status without an answer');

  await receiver.start();
  t.ok(await eventually(() => allDelivered(automation.id, 1, patientDb)), 'delivered once the receiver is back');
  t.equal(receiver.requests.length, 1, 'one request reached the receiver');
  t.equal(receiver.requests[0]!.json.data.media.id, upload.body.id);
  const [delivered] = await deliveries(automation.id, patientDb);
  t.ok(delivered!.attempts >= 3, `delivered at attempt ${delivered!.attempts}`);
  t.equal(receiver.requests[0]!.headers['x-media-delivery-attempt'], String(delivered!.attempts), 'the attempt header counts the attempts');
  t.equal(delivered!.last_error, null, 'the error is cleared once delivered');
});

t.test('receiver always failing: failed after the last attempt, visible in the list, and a retry delivers it', async (t) => {
  const receiver = await startWebhookReceiver(t, () => ({ status: 500, body: 'database? down' }));
  const team = await server.createTeam('Failing');
  const automation = await createAutomation(server, team.teamId, team.key, { url: receiver.url });
  const upload = await uploadMultipart(server, team.teamId, team.key, { content: pngLike(400), fileName: 'f.png' });
  t.equal(upload.status, 201);

  t.ok(await eventually(async () => (await deliveries(automation.id))[0]?.status === 'failed'), 'marked failed');
  t.equal(receiver.requests.length, MAX_ATTEMPTS, 'exactly the maximum number of attempts');
  t.same(receiver.requests.map((request) => request.headers['x-media-delivery-attempt']), ['1', '2', '3']);
  t.equal(new Set(receiver.requests.map((request) => request.headers['x-media-delivery-id'])).size, 1, 'one idempotency id across attempts');
  await sleep(200);
  t.equal(receiver.requests.length, MAX_ATTEMPTS, 'no attempt after the last one');

  const listed = await server.media('GET', `/v1/teams/${team.teamId}/automations/${automation.id}/deliveries`, team.key);
  t.equal(listed.status, 200);
  t.equal(listed.body.count, 1);
  t.match(listed.body.data[0], {
    id: String, automationId: automation.id, eventKind: 'media.uploaded', mediaId: upload.body.id, status: 'failed',
    attempts: MAX_ATTEMPTS, lastStatus: 500, lastError: 'HTTP 500: database? down', nextAttemptAt: null, deliveredAt: null,
  });
  const failedOnly = await server.media('GET', `/v1/teams/${team.teamId}/automations/${automation.id}/deliveries?status=failed`, team.key);
  t.equal(failedOnly.body.count, 1);
  const deliveredOnly = await server.media('GET', `/v1/teams/${team.teamId}/automations/${automation.id}/deliveries?status=delivered`, team.key);
  t.equal(deliveredOnly.body.count, 0);

  receiver.behave(() => 204);
  const deliveryId = listed.body.data[0].id;
  const retried = await server.media('POST', `/v1/teams/${team.teamId}/automations/${automation.id}/deliveries/${deliveryId}/retry`, team.key);
  t.equal(retried.status, 200);
  t.match(retried.body, { id: deliveryId, status: 'pending', attempts: 0 });
  t.ok(await eventually(() => allDelivered(automation.id, 1)), 'delivered after the retry');
  t.equal(receiver.requests.length, MAX_ATTEMPTS + 1);
  t.equal(receiver.requests.at(-1)!.headers['x-media-delivery-id'], deliveryId);

  const again = await server.media('POST', `/v1/teams/${team.teamId}/automations/${automation.id}/deliveries/${deliveryId}/retry`, team.key);
  t.equal(again.status, 409, 'a delivered delivery cannot be retried');
  t.equal(again.body.messageKey, 'error.conflict');
});

t.test('a receiver that never answers: each attempt times out, then the delivery fails', async (t) => {
  const slow = await startTestServer(t, {
    settings: {
      AUTOMATION_ALLOW_PRIVATE_TARGETS: true, AUTOMATION_DELIVERY_TIMEOUT_MS: 300, AUTOMATION_MAX_ATTEMPTS: 2,
      AUTOMATION_BACKOFF_BASE_MS: 20, AUTOMATION_BACKOFF_MAX_MS: 40, AUTOMATION_DISPATCH_INTERVAL_MS: 200,
    },
  });
  const receiver = await startWebhookReceiver(t, () => 'hang');
  const team = await slow.createTeam('Hang');
  const automation = await createAutomation(slow, team.teamId, team.key, { url: receiver.url });
  t.equal((await uploadMultipart(slow, team.teamId, team.key, { content: pngLike(200), fileName: 'h.png' })).status, 201);
  const listed = async () => (await slow.media('GET', `/v1/teams/${team.teamId}/automations/${automation.id}/deliveries`, team.key)).body;
  t.ok(await eventually(async () => (await listed()).data[0]?.status === 'failed'), 'failed after its attempts timed out');
  t.match((await listed()).data[0], { attempts: 2, lastStatus: null, lastError: 'no answer within 300 ms' });
  t.equal(receiver.requests.length, 2);
});

t.test('deliveries of one target arrive in upload order, also across failures', async (t) => {
  // The first two requests fail: the later uploads wait behind the first one instead of overtaking it.
  const receiver = await startWebhookReceiver(t, (_request, index) => (index < 2 ? 503 : 200));
  const team = await server.createTeam('Ordered');
  const automation = await createAutomation(server, team.teamId, team.key, { url: receiver.url });
  const uploaded: string[] = [];
  for (let i = 0; i < 6; i++) {
    const upload = await uploadMultipart(server, team.teamId, team.key, { content: pngLike(100 + i), fileName: `o${i}.png` });
    t.equal(upload.status, 201);
    uploaded.push(upload.body.id);
  }
  t.ok(await eventually(() => allDelivered(automation.id, 6)), 'all delivered');
  const successful = receiver.requests.filter((_request, index) => index >= 2);
  t.same(successful.map((request) => request.json.data.media.id), uploaded, 'received in upload order');
  t.equal(new Set(eventIds(successful)).size, 6, 'each event once');
  t.same(receiver.requests.slice(0, 2).map((request) => request.json.data.media.id), [uploaded[0], uploaded[0]], 'the failures were the first upload');
});

t.test('folder and tag filters, disabled targets and targets created after the upload', async (t) => {
  const receiver = await startWebhookReceiver(t);
  const team = await server.createTeam('Filters');
  t.equal((await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxAutomations: 10 })).status, 200, 'more than the default 4 targets');
  const folders = await Promise.all(['eu', 'us'].map(async (name) => (await server.media('POST', `/v1/cdn/media/${team.teamId}/folders`, team.key, { body: { name } })).body));
  const euChild = (await server.media('POST', `/v1/cdn/media/${team.teamId}/folders`, team.key, { body: { name: 'fra', parentId: folders[0].id } })).body;
  const hooks = {
    euOnly: await createAutomation(server, team.teamId, team.key, { url: `${receiver.url}/eu-only`, folderId: folders[0].id }),
    euTree: await createAutomation(server, team.teamId, team.key, { url: `${receiver.url}/eu-tree`, folderId: folders[0].id, includeSubfolders: true }),
    tagged: await createAutomation(server, team.teamId, team.key, { url: `${receiver.url}/tagged`, tags: ['crash', 'server:1'] }),
    off: await createAutomation(server, team.teamId, team.key, { url: `${receiver.url}/off`, enabled: false }),
  };
  const upload = async (name: string, query: string) => {
    const response = await uploadMultipart(server, team.teamId, team.key, { content: pngLike(120), fileName: name }, query);
    t.equal(response.status, 201, `upload ${name}`);
    return response.body.id as string;
  };
  const inEu = await upload('eu.png', `folderId=${folders[0].id}`);
  const inFra = await upload('fra.png', `folderId=${euChild.id}&tags=crash`);
  const inUs = await upload('us.png', `folderId=${folders[1].id}&tags=crash,server:1,extra`);
  const loose = await upload('loose.png', 'tags=server:1');
  const byPath = (path: string) => receiver.requests.filter((request) => request.path === path).map((request) => request.json.data.media.id).sort();
  t.ok(await eventually(() => receiver.requests.length === 4), 'four deliveries');
  await sleep(200);
  t.same(byPath('/eu-only'), [inEu]);
  t.same(byPath('/eu-tree'), [inEu, inFra].sort());
  t.same(byPath('/tagged'), [inUs], 'all tags must match');
  t.same(byPath('/off'), [], 'a disabled target receives nothing');
  t.equal(receiver.requests.length, 4);
  void loose;

  // Enabled later: it gets the events from then on, not the ones it missed.
  const enabled = await server.media('PATCH', `/v1/teams/${team.teamId}/automations/${hooks.off.id}`, team.key, { body: { enabled: true } });
  t.equal(enabled.status, 200);
  const late = await createAutomation(server, team.teamId, team.key, { url: `${receiver.url}/late` });
  const after = await upload('after.png', '');
  t.ok(await eventually(() => byPath('/off').length === 1 && byPath('/late').length === 1));
  t.same(byPath('/off'), [after]);
  t.same(byPath('/late'), [after], 'a target created after an upload does not receive it');
});

t.test('a discord target receives a Discord webhook message', async (t) => {
  const receiver = await startWebhookReceiver(t, () => 204);
  const team = await server.createTeam('Discord');
  const automation = await createAutomation(server, team.teamId, team.key, { kind: 'discord', url: `${receiver.url}/api/webhooks/1/token` });
  const shown = await uploadMultipart(server, team.teamId, team.key, { content: pngLike(2_500_000), fileName: 'big_*shot*.png' }, 'tags=map:dust');
  const hidden = await uploadJson(server, team.teamId, team.key, { file: pngLike(100).toString('base64'), fileName: 'secret.png' });
  t.equal(shown.status, 201);
  t.equal(hidden.status, 201);
  t.ok(await eventually(() => allDelivered(automation.id, 2)));
  const [publicMessage, privateMessage] = receiver.requests.map((request) => request.json);
  t.match(publicMessage, {
    content: 'New upload: **big\\_\\*shot\\*.png**',
    allowed_mentions: { parse: [] },
    embeds: [{ title: 'big_*shot*.png', url: shown.body.publicUrl, description: shown.body.publicUrl, image: { url: shown.body.publicUrl } }],
  });
  t.same(publicMessage.embeds[0].fields.find((field: { name: string }) => field.name === 'Size'), { name: 'Size', value: '2.5 MB', inline: true });
  t.same(publicMessage.embeds[0].fields.find((field: { name: string }) => field.name === 'Tags'), { name: 'Tags', value: '`map:dust`', inline: false });
  t.equal(privateMessage.embeds[0].url, undefined, 'no link for a private file');
  t.match(privateMessage.embeds[0].description, /private/);
  t.notOk(JSON.stringify(privateMessage).includes('/media/team/'), 'no path or link of the private file');
  t.ok(verifySignature(automation.secret, receiver.requests[0]!.body, String(receiver.requests[0]!.headers['x-media-signature'])), 'signed too');
});

t.test('wake-ups: with a one-hour poll interval, commits, backoffs and manual retries still drive deliveries', async (t) => {
  // Nothing here may wait for the poll: the outbox NOTIFY, the due time of a backoff and the retry route wake the dispatcher.
  const sleepy = await startTestServer(t, {
    settings: {
      AUTOMATION_ALLOW_PRIVATE_TARGETS: true, AUTOMATION_DISPATCH_INTERVAL_MS: 3_600_000, AUTOMATION_MAX_ATTEMPTS: 2,
      AUTOMATION_BACKOFF_BASE_MS: 20, AUTOMATION_BACKOFF_MAX_MS: 40,
    },
  });
  const receiver = await startWebhookReceiver(t, (_request, index) => (index === 0 ? 500 : 200));
  const team = await sleepy.createTeam('Sleepy');
  const automation = await createAutomation(sleepy, team.teamId, team.key, { url: receiver.url });
  const list = async () => (await sleepy.media('GET', `/v1/teams/${team.teamId}/automations/${automation.id}/deliveries`, team.key)).body;

  t.equal((await uploadMultipart(sleepy, team.teamId, team.key, { content: pngLike(100), fileName: 'w1.png' })).status, 201);
  t.ok(await eventually(async () => (await list()).data[0]?.status === 'delivered'), 'woken by the commit, retried at its due time');
  t.equal(receiver.requests.length, 2);

  receiver.behave(() => 500);
  t.equal((await uploadMultipart(sleepy, team.teamId, team.key, { content: pngLike(100), fileName: 'w2.png' })).status, 201);
  t.ok(await eventually(async () => (await list()).data[0]?.status === 'failed'), 'failed after two attempts');
  receiver.behave(() => 200);
  t.equal((await sleepy.media('POST', `/v1/teams/${team.teamId}/automations/${automation.id}/deliveries/retry-failed`, team.key)).body.retried, 1);
  t.ok(await eventually(async () => (await list()).data[0]?.status === 'delivered'), 'woken by the retry');
  t.equal(receiver.requests.length, 5);
});
