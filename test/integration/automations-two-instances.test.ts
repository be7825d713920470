import t from 'tap';
import { connectPg } from '../helpers/database.ts';
import { startTestServer } from '../helpers/server.ts';
import { pngLike, uploadJson, uploadMultipart } from '../helpers/uploads.ts';
import { eventually, sleep } from '../helpers/wait.ts';
import { startWebhookReceiver } from '../helpers/webhook-receiver.ts';

// Two instances of one deployment share the database and both dispatch: each event reaches each
// target once (in the normal case: no instance dies), in order per target.

const settings = {
  RATE_LIMIT_POINTS: 100_000,
  AUTOMATION_ALLOW_PRIVATE_TARGETS: true,
  AUTOMATION_BACKOFF_BASE_MS: 20,
  AUTOMATION_BACKOFF_MAX_MS: 100,
  AUTOMATION_DISPATCH_INTERVAL_MS: 200,
};
const first = await startTestServer(t, { settings });
const second = await startTestServer(t, { settings, databaseUrl: first.databaseUrl });
const db = await connectPg(first.databaseUrl);
t.teardown(() => db.end());

t.test('uploads through both instances: every event delivered once to each target, in order', async (t) => {
  const receiver = await startWebhookReceiver(t);
  const team = await first.createTeam('TwoDispatch');
  const hooks: string[] = [];
  for (const path of ['/a', '/b']) {
    const created = await second.media('POST', `/v1/teams/${team.teamId}/automations`, team.key, { body: { name: path, url: `${receiver.url}${path}` } });
    t.equal(created.status, 201);
    hooks.push(created.body.id);
  }

  const uploads = await Promise.all(
    Array.from({ length: 24 }, (_, i) => {
      const target = i % 2 === 0 ? first : second;
      return i % 3 === 0
        ? uploadJson(target, team.teamId, team.key, { file: pngLike(200 + i).toString('base64'), fileName: `j${i}.png` })
        : uploadMultipart(target, team.teamId, team.key, { content: pngLike(200 + i), fileName: `m${i}.png` });
    }),
  );
  t.same(uploads.map((response) => response.status), Array(24).fill(201));

  t.ok(await eventually(async () => {
    const { rows } = await db.query<{ count: string }>(`select count(*) from automation_delivery where status = 'delivered'`);
    return Number(rows[0]!.count) === 48;
  }, 30_000), 'all 48 deliveries delivered');
  await sleep(300);
  t.equal(receiver.requests.length, 48, 'no request twice');

  const mediaIds = uploads.map((response) => response.body.id).sort();
  for (const [index, path] of ['/a', '/b'].entries()) {
    const received = receiver.requests.filter((request) => request.path === path);
    t.same(received.map((request) => request.json.data.media.id).sort(), mediaIds, `${path}: every upload once`);
    const { rows } = await db.query<{ id: string; attempts: number }>('select id, attempts from automation_delivery where automation_id = $1 order by seq', [hooks[index]]);
    t.same(received.map((request) => request.headers['x-media-delivery-id']), rows.map((row) => row.id), `${path}: received in delivery order`);
    t.ok(rows.every((row) => row.attempts === 1), `${path}: one attempt each`);
  }
});
