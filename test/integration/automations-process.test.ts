import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { connectPg, createTestDatabase } from '../helpers/database.ts';
import { api, spawnService } from '../helpers/service-process.ts';
import { multipartBody, pngLike, uploadPath } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';
import { startWebhookReceiver } from '../helpers/webhook-receiver.ts';
import { verifySignature } from '../../src/domain/automations/signature.ts';

// A real instance is SIGKILLed after the upload committed and while its delivery is on the wire
// (the receiver holds the request without answering). The event is not lost: the next start takes
// the delivery over once its lease has run out, and delivers it again, with the same ids.

const AUTH_SECRET = 'automation-process-test-secret';

t.test('an instance killed between commit and delivery: the event is delivered after the restart', async (t) => {
  const databaseUrl = await createTestDatabase(t);
  const dataDir = await mkdtemp(join(tmpdir(), 'media-automation-'));
  await chmod(dataDir, 0o755);
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp',
    DATA_DIR: dataDir, DATABASE_URL: databaseUrl, AUTH_SECRET, PORT: '0', LOG_LEVEL: 'info',
    AUTOMATION_ALLOW_PRIVATE_TARGETS: 'true',
    // Long enough that the held attempt cannot time out before the kill; the lease of a claim is this
    // plus 5 s, which is how long the restarted instance waits before taking over.
    AUTOMATION_DELIVERY_TIMEOUT_MS: '2500',
    AUTOMATION_BACKOFF_BASE_MS: '20', AUTOMATION_BACKOFF_MAX_MS: '100', AUTOMATION_DISPATCH_INTERVAL_MS: '250',
  };
  const receiver = await startWebhookReceiver(t, () => 'hang');
  const db = await connectPg(databaseUrl);
  t.teardown(() => db.end());

  const first = await spawnService(t, { env });
  const team = await api(first.port, 'POST', '/v1/admin/teams', { authSecret: AUTH_SECRET }, { name: 'Killed' });
  t.equal(team.status, 201);
  const teamId: string = team.body.team.id;
  const key: string = team.body.apiKey.key;
  const automation = await api(first.port, 'POST', `/v1/teams/${teamId}/automations`, { authorization: `Bearer ${key}` }, { name: 'hook', url: receiver.url });
  t.equal(automation.status, 201);

  const { body, contentType } = multipartBody([{ content: pngLike(800), fileName: 'crash.png' }]);
  const upload = await fetch(`http://127.0.0.1:${first.port}${uploadPath(teamId)}`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': contentType }, body,
  });
  t.equal(upload.status, 201, 'the upload committed');
  const media = (await upload.json()) as { id: string };

  t.ok(await eventually(() => receiver.requests.length === 1), 'the delivery is on the wire');
  first.child.kill('SIGKILL');
  await first.exited;
  const { rows: before } = await db.query<{ status: string; attempts: number }>('select status, attempts from automation_delivery');
  t.same(before, [{ status: 'delivering', attempts: 1 }], 'the killed instance left its claim behind');

  receiver.behave(() => 200);
  const second = await spawnService(t, { env });
  t.ok(
    await eventually(async () => {
      const { rows } = await db.query<{ status: string }>('select status from automation_delivery');
      return rows[0]?.status === 'delivered';
    }, 30_000),
    'delivered by the restarted instance',
  );
  t.equal(receiver.requests.length, 2, 'sent once more (at least once)');
  const [lost, delivered] = receiver.requests;
  t.equal(delivered!.headers['x-media-event-id'], lost!.headers['x-media-event-id'], 'the same event id');
  t.equal(delivered!.headers['x-media-delivery-id'], lost!.headers['x-media-delivery-id'], 'the same idempotency id: a receiver can deduplicate');
  t.equal(delivered!.headers['x-media-delivery-attempt'], '2');
  t.equal(delivered!.json.data.media.id, media.id);
  t.equal(delivered!.body, lost!.body, 'the same body');
  t.ok(verifySignature(automation.body.secret, delivered!.body, String(delivered!.headers['x-media-signature'])), 'validly signed');
  const { rows: after } = await db.query<{ attempts: number; last_error: string | null }>('select attempts, last_error from automation_delivery');
  t.same(after, [{ attempts: 2, last_error: null }]);

  second.child.kill('SIGTERM');
  t.equal(await second.exited, 0, 'the restarted instance shuts down cleanly');
});
