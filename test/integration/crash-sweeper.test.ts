import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { promisify } from 'node:util';
import t from 'tap';
import { createTeam, heldUpload, inProgress, prepareInstance, startService, upload, type Instance } from '../helpers/crashed-instance.ts';
import { connectPg } from '../helpers/database.ts';
import { repo } from '../helpers/service-process.ts';
import { startTestServer } from '../helpers/server.ts';
import { closeS3Client, DRIVERS_OF_THIS_PASS } from '../helpers/storage.ts';
import { MiB, multipartBody, pngLike, teamStorageState, uploadPath } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';

// Crash safety (issue 6.2): a real instance is SIGKILLed mid-upload; the next start sweeps what it left.
// Then `storage reconcile` repairs a corrupted storage counter.

const execFileAsync = promisify(execFile);

t.teardown(closeS3Client);

async function cli(instance: Instance, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, ['src/cli/main.ts', ...args], {
      cwd: repo,
      env: { ...instance.env, LOG_LEVEL: 'warn' },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? 1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

async function setUsedStorage(databaseUrl: string, teamId: string, bytes: number): Promise<void> {
  const pg = await connectPg(databaseUrl);
  try {
    await pg.query('update team set used_storage = $1 where id = $2', [bytes, teamId]);
  } finally {
    await pg.end();
  }
}

for (const driver of DRIVERS_OF_THIS_PASS) {
  t.test(`${driver}: SIGKILL mid-upload leaves leftovers; the next start sweeps them; reconcile repairs drift`, async (t) => {
    const keyPrefix = `crash-${randomBytes(4).toString('hex')}/`;
    const instance = await prepareInstance(t, driver, keyPrefix);
    const first = await startService(t, instance);
    const team = await createTeam(first.port, 'Crash');

    // 24 MiB held at half: past the unreserved size (reservation) and past an 8 MiB S3 part (a multipart upload exists).
    // One media upload and one team file upload: the sweeper covers every kind of file.
    const held = heldUpload(first.port, team.teamId, team.key, pngLike(24 * MiB));
    const heldTeamFile = heldUpload(first.port, team.teamId, team.key, pngLike(24 * MiB), `/v1/teams/${team.teamId}/files/multipart`);
    t.ok(
      await eventually(async () => (await teamStorageState(instance.databaseUrl, team.teamId)).reservations === 2 && (await inProgress(driver, instance, keyPrefix)).length === 2, 20_000),
      'the held uploads have reservations and in-progress writes',
    );
    first.child.kill('SIGKILL');
    await first.exited;
    held.destroy();
    heldTeamFile.destroy();

    const left = await teamStorageState(instance.databaseUrl, team.teamId);
    t.equal(left.reservations, 2, 'the killed instance left its reservation rows');
    t.ok(left.reservedStorage > 0, `and reserved bytes (${left.reservedStorage})`);
    t.equal(left.files, 0);
    t.equal((await inProgress(driver, instance, keyPrefix)).length, 2, driver === 'fs' ? 'and its temp files' : 'and its multipart uploads');
    const pg = await connectPg(instance.databaseUrl);
    const keys = (await pg.query('select storage_key from upload_reservation where team_id = $1 order by storage_key', [team.teamId])).rows.map((row) => row.storage_key);
    await pg.end();
    t.match(keys, [/^media\//, /^team-files\//], 'a media and a team-file reservation');

    await new Promise((r) => setTimeout(r, 1500)); // older than CRASH_SWEEP_MIN_AGE_SECONDS
    const second = await startService(t, instance);
    t.ok(
      await eventually(async () => (await teamStorageState(instance.databaseUrl, team.teamId)).reservations === 0 && (await inProgress(driver, instance, keyPrefix)).length === 0, 20_000),
      'the next start swept the reservation and the in-progress write',
    );
    t.match(await teamStorageState(instance.databaseUrl, team.teamId), { files: 0, usedStorage: 0, reservedStorage: 0, reservations: 0 }, 'nothing reserved or counted');
    t.ok(await eventually(async () => second.output.some((line) => line.includes('crash sweep cleaned up')), 20_000), 'the sweep logged what it cleaned');

    // The instance serves normally afterwards.
    t.equal(await upload(second.port, team.teamId, team.key, pngLike(3000)), 201);
    t.equal(await upload(second.port, team.teamId, team.key, pngLike(5000)), 201);
    const other = await createTeam(second.port, 'Other');
    t.equal(await upload(second.port, other.teamId, other.key, pngLike(1000)), 201);
    const sizes = await teamStorageState(instance.databaseUrl, team.teamId);
    t.equal(sizes.usedStorage, sizes.sumOfSizes);

    // Reconcile: corrupt the counter, report it, repair it.
    await setUsedStorage(instance.databaseUrl, team.teamId, sizes.sumOfSizes + 12345);
    const dry = await cli(instance, ['storage', 'reconcile', '--dry-run']);
    t.equal(dry.code, 0, dry.stderr);
    const dryReport = JSON.parse(dry.stdout) as { teamId: string; counted: number; actual: number; drift: number; repaired: boolean }[];
    t.equal(dryReport.length, 2, 'every team is reported');
    t.same(
      dryReport.find((row) => row.teamId === team.teamId),
      { teamId: team.teamId, counted: sizes.sumOfSizes + 12345, actual: sizes.sumOfSizes, drift: 12345, repaired: false },
      'the drift is reported',
    );
    t.match(dryReport.find((row) => row.teamId === other.teamId), { drift: 0, repaired: false }, 'a correct team shows no drift');
    t.equal((await teamStorageState(instance.databaseUrl, team.teamId)).usedStorage, sizes.sumOfSizes + 12345, '--dry-run changed nothing');

    const fixed = await cli(instance, ['storage', 'reconcile', '--team', team.teamId]);
    t.equal(fixed.code, 0, fixed.stderr);
    t.same(JSON.parse(fixed.stdout), [{ teamId: team.teamId, counted: sizes.sumOfSizes + 12345, actual: sizes.sumOfSizes, drift: 12345, repaired: true }], '--team reports only that team');
    const repaired = await teamStorageState(instance.databaseUrl, team.teamId);
    t.equal(repaired.usedStorage, repaired.sumOfSizes, 'the counter is repaired');

    const again = await cli(instance, ['storage', 'reconcile']);
    t.equal(again.code, 0, again.stderr);
    t.ok((JSON.parse(again.stdout) as { drift: number }[]).every((row) => row.drift === 0), 'no drift is left');

    const unknown = await cli(instance, ['storage', 'reconcile', '--team', 'no-such-team']);
    t.equal(unknown.code, 1, 'an unknown team fails');
    t.match(JSON.parse(unknown.stderr), { status: 404 });

    second.child.kill('SIGTERM');
    t.equal(await second.exited, 0);
  });
}

t.test('a sweep leaves alone the uploads running in its own instance, however old they look', async (t) => {
  const server = await startTestServer(t);
  await server.app.services.crashSweeper.stop(); // only the explicit runs below
  const team = await server.createTeam('Live');
  const { body, contentType } = multipartBody([{ content: pngLike(6 * MiB), fileName: 'live.png' }]);
  const request = httpRequest(`${server.baseUrl}${uploadPath(team.teamId)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${team.key}`, 'content-type': contentType, 'content-length': String(body.length) },
  });
  const response = new Promise<number>((resolveStatus, reject) => {
    request.on('response', (res) => {
      res.resume();
      res.on('end', () => resolveStatus(res.statusCode ?? 0));
    });
    request.on('error', reject);
  });
  const half = Math.floor(body.length / 2);
  request.write(body.subarray(0, half));
  const instance = { databaseUrl: server.databaseUrl, dataDir: server.dataDir, env: {} };
  t.ok(
    await eventually(async () => (await teamStorageState(server.databaseUrl, team.teamId)).reservations === 1 && (await inProgress('fs', instance, '')).length === 1, 20_000),
    'the upload holds a reservation and a temp file',
  );
  // Two hours from now, everything of the upload looks stale; it is still this instance's.
  const result = await server.app.services.crashSweeper.runOnce(new Date(Date.now() + 2 * 3_600_000));
  t.same(result, { reservations: 0, releasedBytes: 0, uploads: 0, tusExpired: 0 }, 'nothing swept');
  t.equal((await teamStorageState(server.databaseUrl, team.teamId)).reservations, 1);
  t.equal((await inProgress('fs', instance, '')).length, 1);
  request.end(body.subarray(half));
  t.equal(await response, 201, 'the upload lands');
  t.match(await teamStorageState(server.databaseUrl, team.teamId), { files: 1, reservations: 0, reservedStorage: 0 });
});
