import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { Application } from '../../src/app.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { createTeam, heldUpload, inProgress, prepareInstance, startService, upload, type Instance } from '../helpers/crashed-instance.ts';
import { connectPg, createTestDatabase } from '../helpers/database.ts';
import { startTestServer, TEST_AUTH_SECRET } from '../helpers/server.ts';
import { closeS3Client } from '../helpers/storage.ts';
import { MiB, multipartBody, pngLike, teamStorageState, uploadPath } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';

t.teardown(closeS3Client);

// Issue 17.7: an instance that restarts releases its previous incarnation's leftovers at once (its
// instance id is stored in DATA_DIR; the boot id tells the incarnations apart), not after
// CRASH_SWEEP_MIN_AGE_SECONDS, while a live instance's upload on the same database is left alone.

async function reservationRows(databaseUrl: string) {
  const pg = await connectPg(databaseUrl);
  try {
    return (await pg.query<{ storage_key: string; instance_id: string | null; boot_id: string | null }>(
      'select storage_key, instance_id, boot_id from upload_reservation order by storage_key',
    )).rows;
  } finally {
    await pg.end();
  }
}

async function reservationKeys(databaseUrl: string): Promise<string[]> {
  return (await reservationRows(databaseUrl)).map((row) => row.storage_key);
}

/** An Application in this process that the test stops itself (teardown stops it only if the test did not). */
async function startApp(t: { teardown(fn: () => unknown): void }, databaseUrl: string, dataDir: string, settings: Record<string, unknown> = {}) {
  const config = loadConfig({
    env: {},
    overrides: { PORT: 0, DATABASE_URL: databaseUrl, DATA_DIR: dataDir, AUTH_SECRET: TEST_AUTH_SECRET, LOG_LEVEL: 'silent', ...settings },
  });
  const app = new Application(config, createLogger(config.logLevel));
  await app.start();
  let stopped = false;
  t.teardown(async () => {
    if (!stopped) await app.stop();
  });
  return {
    app,
    stop: async () => {
      stopped = true;
      await app.stop();
    },
  };
}

/**
 * Sends half of a multipart upload, then trickles a KiB every second (so UPLOAD_IDLE_TIMEOUT_SECONDS
 * never ends it) until finish() sends the rest.
 */
function liveUpload(port: number, teamId: string, key: string, content: Buffer) {
  const { body, contentType } = multipartBody([{ content, fileName: 'live.png' }]);
  const request = httpRequest(`http://127.0.0.1:${port}${uploadPath(teamId)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': contentType, 'content-length': String(body.length) },
  });
  const status = new Promise<number | string>((resolveStatus) => {
    request.on('response', (res) => {
      res.resume();
      res.on('end', () => resolveStatus(res.statusCode ?? 0));
    });
    // Settles the answer instead of rejecting, so a failure shows in the assertion on it.
    request.on('error', (error) => resolveStatus(`request failed: ${error.message}`));
  });
  let sent = Math.floor(body.length / 2);
  request.write(body.subarray(0, sent));
  const trickle = setInterval(() => {
    request.write(body.subarray(sent, sent + 1024));
    sent += 1024;
  }, 1000);
  trickle.unref();
  return {
    status,
    finish: () => {
      clearInterval(trickle);
      request.end(body.subarray(sent));
    },
  };
}

for (const driver of ['fs', 's3'] as const) {
  t.test(`${driver}: after SIGKILL the restarted instance releases its own reservation and write at once, not a live instance's`, async (t) => {
    const keyPrefix = `restart-${randomBytes(4).toString('hex')}/`;
    const instance = await prepareInstance(t, driver, keyPrefix);
    delete instance.env.CRASH_SWEEP_MIN_AGE_SECONDS; // the default 600 s: only the restart can release it quickly
    const liveDir = await mkdtemp(join(tmpdir(), 'media-crash-live-'));
    t.teardown(() => rm(liveDir, { recursive: true, force: true }));
    const live: Instance = { ...instance, dataDir: liveDir, env: { ...instance.env, DATA_DIR: liveDir } };

    const first = await startService(t, instance);
    const other = await startService(t, live);
    const team = await createTeam(first.port, 'Restart');
    const held = heldUpload(first.port, team.teamId, team.key, pngLike(24 * MiB));
    // 12 MiB held at half: past the first 5 MiB S3 part, so a multipart upload exists, and short of a
    // second full part, so a slow S3 server never makes the instance pause the socket for long
    // (uWebSockets.js drops a connection that delivers nothing for 10 s).
    const running = liveUpload(other.port, team.teamId, team.key, pngLike(12 * MiB));
    const writes = async () => (await inProgress(driver, instance, keyPrefix)).length + (driver === 'fs' ? (await inProgress(driver, live, keyPrefix)).length : 0);
    t.ok(
      await eventually(async () => (await teamStorageState(instance.databaseUrl, team.teamId)).reservations === 2 && (await writes()) === 2, 20_000),
      'both uploads hold a reservation and an in-progress write',
    );
    // The killed instance's id is the one stored in its DATA_DIR.
    const deadId = (await readFile(join(instance.dataDir, 'instance-id'), 'utf8')).trim();
    const rows = await reservationRows(instance.databaseUrl);
    t.ok(rows.every((row) => row.instance_id && row.boot_id), 'every reservation names its instance and boot');
    t.not(rows[0]!.instance_id, rows[1]!.instance_id, 'the two instances have different ids');
    const deadKey = rows.find((row) => row.instance_id === deadId)?.storage_key;
    const liveKey = rows.find((row) => row.instance_id !== deadId)?.storage_key;
    t.ok(deadKey && liveKey && deadKey !== liveKey, 'the two reservations are told apart');

    first.child.kill('SIGKILL');
    await first.exited;
    held.destroy();
    const second = await startService(t, instance);
    const ready = Date.now();
    t.ok(
      await eventually(async () => (await reservationKeys(instance.databaseUrl)).length === 1, 5_000),
      `the restarted instance released its previous reservation within seconds of starting (${Date.now() - ready} ms after ready), not after CRASH_SWEEP_MIN_AGE_SECONDS`,
    );
    t.same(await reservationKeys(instance.databaseUrl), [liveKey], "the live instance's reservation is left");
    if (driver === 'fs') {
      t.ok(await eventually(async () => (await inProgress(driver, instance, keyPrefix)).length === 0), 'its temp file is gone');
      t.equal((await inProgress(driver, live, keyPrefix)).length, 1, "the live instance's temp file is left");
    } else {
      t.ok(await eventually(async () => (await inProgress(driver, instance, keyPrefix)).length === 1), 'its multipart upload is aborted');
      t.same(await inProgress(driver, instance, keyPrefix), [`${keyPrefix}${liveKey}`], "the live instance's multipart upload is left");
    }
    t.ok(await eventually(() => second.output.some((line) => line.includes("released the previous incarnation's upload reservations"))), 'and logged it');

    running.finish();
    t.equal(await running.status, 201, "the live instance's upload lands");
    if (!t.passing()) t.comment(other.output.slice(-30).join('\n'));
    t.match(await teamStorageState(instance.databaseUrl, team.teamId), { files: 1, reservations: 0, reservedStorage: 0 }, 'nothing is left reserved');
    const state = await teamStorageState(instance.databaseUrl, team.teamId);
    t.equal(state.usedStorage, state.sumOfSizes);
    t.equal(await upload(second.port, team.teamId, team.key, pngLike(3000)), 201, 'the restarted instance serves');
  });
}

t.test('instances sharing a DATA_DIR get distinct ids; a restart keeps its id with a new boot id', async (t) => {
  const first = await startTestServer(t);
  await first.app.services.crashSweeper.stop();
  const second = await startApp(t, first.databaseUrl, first.dataDir);
  const a = first.app.services.identity!;
  const b = second.app.services.identity!;
  t.not(a.instanceId, b.instanceId, 'two live instances never share an id');
  t.equal(b.instanceId, `${a.instanceId}.2`, 'the second takes the next slot of the stored id');

  // A live upload on the first is never released by the second's sweep, however often it runs.
  const team = await first.createTeam('Shared');
  const held = liveUpload(Number(new URL(first.baseUrl).port), team.teamId, team.key, pngLike(2 * MiB));
  t.ok(await eventually(async () => (await teamStorageState(first.databaseUrl, team.teamId)).reservations === 1), 'the upload holds a reservation');
  t.same(await second.app.services.crashSweeper.runOnce(), { reservations: 0, releasedBytes: 0, uploads: 0 }, "the other instance's sweep takes nothing");
  held.finish();
  t.equal(await held.status, 201, 'the upload lands');

  // Restarted in the same DATA_DIR, the second keeps its id (the first still holds the other slot).
  const bootBefore = b.bootId;
  await second.stop();
  const again = await startTestServer(t, { databaseUrl: first.databaseUrl, dataDir: first.dataDir });
  t.equal(again.app.services.identity!.instanceId, b.instanceId, 'the same id after a restart');
  t.not(again.app.services.identity!.bootId, bootBefore, 'a new boot id');
});

t.test('a configured INSTANCE_ID held by a live instance stops a second start', async (t) => {
  const databaseUrl = await createTestDatabase(t);
  const dirs = await Promise.all([0, 1].map(() => mkdtemp(join(tmpdir(), 'media-instance-id-'))));
  t.teardown(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));
  const first = await startApp(t, databaseUrl, dirs[0]!, { INSTANCE_ID: 'game-eu-1' });
  t.equal(first.app.services.identity!.instanceId, 'game-eu-1');
  const config = loadConfig({
    env: {},
    overrides: { PORT: 0, DATABASE_URL: databaseUrl, DATA_DIR: dirs[1]!, AUTH_SECRET: TEST_AUTH_SECRET, LOG_LEVEL: 'silent', INSTANCE_ID: 'game-eu-1' },
  });
  await t.rejects(new Application(config, createLogger('silent')).start(), {
    name: 'InstanceIdentityError',
    message: /INSTANCE_ID game-eu-1 is in use by a live instance/,
  }, 'a second instance with the same INSTANCE_ID does not start');
  await first.stop();
  const next = await startTestServer(t, { databaseUrl, settings: { INSTANCE_ID: 'game-eu-1' } });
  t.equal(next.app.services.identity!.instanceId, 'game-eu-1', 'free again once the holder stopped');
});
