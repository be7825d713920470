import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { Application } from '../../src/app.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { createTeam, heldUpload, inProgress, prepareInstance, startService, upload } from '../helpers/crashed-instance.ts';
import { connectPg, createTestDatabase } from '../helpers/database.ts';
import { startTestServer, TEST_AUTH_SECRET } from '../helpers/server.ts';
import { closeS3Client, driverSettings } from '../helpers/storage.ts';
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
  t.test(`${driver}: after SIGKILL the restarted instance releases its own reservation and write at once`, async (t) => {
    const keyPrefix = `restart-${randomBytes(4).toString('hex')}/`;
    const instance = await prepareInstance(t, driver, keyPrefix);
    delete instance.env.CRASH_SWEEP_MIN_AGE_SECONDS; // the default 600 s: only the restart can release it quickly

    const first = await startService(t, instance);
    const team = await createTeam(first.port, 'Restart');
    const held = heldUpload(first.port, team.teamId, team.key, pngLike(24 * MiB));
    t.ok(
      await eventually(async () => (await teamStorageState(instance.databaseUrl, team.teamId)).reservations === 1 && (await inProgress(driver, instance, keyPrefix)).length === 1, 20_000),
      'the held upload has a reservation and an in-progress write',
    );
    const [row] = await reservationRows(instance.databaseUrl);
    t.equal(row!.instance_id, (await readFile(join(instance.dataDir, 'instance-id'), 'utf8')).trim(), 'the reservation names the id stored in DATA_DIR');
    t.match(row!.boot_id, /^[0-9a-f-]{36}$/, 'and the boot');

    first.child.kill('SIGKILL');
    await first.exited;
    held.destroy();
    const left = await teamStorageState(instance.databaseUrl, team.teamId);
    t.ok(left.reservedStorage > 0, `the killed instance left reserved bytes (${left.reservedStorage})`);

    const second = await startService(t, instance);
    const ready = Date.now();
    t.ok(
      await eventually(async () => (await teamStorageState(instance.databaseUrl, team.teamId)).reservedStorage === 0, 5_000),
      `the team's space is free within seconds of the restart (${Date.now() - ready} ms after ready), not after CRASH_SWEEP_MIN_AGE_SECONDS`,
    );
    t.match(await teamStorageState(instance.databaseUrl, team.teamId), { files: 0, usedStorage: 0, reservedStorage: 0, reservations: 0 });
    t.ok(await eventually(async () => (await inProgress(driver, instance, keyPrefix)).length === 0), driver === 'fs' ? 'its temp file is gone' : 'its multipart upload is aborted');
    t.ok(await eventually(() => second.output.some((line) => line.includes("released the previous incarnation's upload reservations"))), 'and logged it');
    t.equal(await upload(second.port, team.teamId, team.key, pngLike(3000)), 201, 'the restarted instance serves');
  });
}

// A live instance's upload is never touched by another instance's restart. In process: the upload must
// stay open while the other instance restarts, and a body open for more than ~10 s is dropped by the
// HTTP server (see the report of issue 17), which a spawned restart under load can exceed.
for (const driver of ['fs', 's3'] as const) {
  t.test(`${driver}: a restarting instance leaves a live instance's reservation and write alone`, async (t) => {
    const keyPrefix = `live-${randomBytes(4).toString('hex')}/`;
    const settings = { ...driverSettings(driver), ...(driver === 's3' ? { S3_KEY_PREFIX: keyPrefix } : {}) };
    const live = await startTestServer(t, { settings });
    const restartingDir = await mkdtemp(join(tmpdir(), 'media-restarting-'));
    t.teardown(() => rm(restartingDir, { recursive: true, force: true }));
    const restarting = await startApp(t, live.databaseUrl, restartingDir, settings);
    const team = await live.createTeam('LiveTeam');
    await live.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxMediaFileSize: 100 * MiB, maxTeamStorage: 1024 * 1024 });
    const writes = async () => driver === 'fs'
      ? (await readdir(join(live.dataDir, 'files', '.uploads')).catch(() => [] as string[])).length
      : (await inProgress('s3', { databaseUrl: '', dataDir: '', env: {} }, keyPrefix)).length;
    // 12 MiB held at half: past the first 5 MiB S3 part, so a multipart upload exists.
    const running = liveUpload(Number(new URL(live.baseUrl).port), team.teamId, team.key, pngLike(12 * MiB));
    t.ok(
      await eventually(async () => (await teamStorageState(live.databaseUrl, team.teamId)).reservations === 1 && (await writes()) === 1, 8_000),
      'the live upload holds a reservation and an in-progress write',
    );
    const before = await reservationRows(live.databaseUrl);

    const previousId = restarting.app.services.identity!.instanceId;
    await restarting.stop();
    const again = await startApp(t, live.databaseUrl, restartingDir, settings);
    t.equal(again.app.services.identity!.instanceId, previousId, 'the restarted instance has its old id');
    t.same(await again.app.services.crashSweeper.runOnce(), { reservations: 0, releasedBytes: 0, uploads: 0, tusExpired: 0 }, 'its sweep takes nothing of the live instance');
    t.same(await reservationRows(live.databaseUrl), before, "the live instance's reservation is left");
    t.equal(await writes(), 1, "and its in-progress write");

    running.finish();
    t.equal(await running.status, 201, "the live instance's upload lands");
    t.match(await teamStorageState(live.databaseUrl, team.teamId), { files: 1, reservations: 0, reservedStorage: 0 });
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
  const held = liveUpload(Number(new URL(first.baseUrl).port), team.teamId, team.key, pngLike(6 * MiB));
  t.ok(await eventually(async () => (await teamStorageState(first.databaseUrl, team.teamId)).reservations === 1), 'the upload holds a reservation');
  t.same(await second.app.services.crashSweeper.runOnce(), { reservations: 0, releasedBytes: 0, uploads: 0, tusExpired: 0 }, "the other instance's sweep takes nothing");
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
