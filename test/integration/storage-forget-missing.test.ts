import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { createTeam, prepareInstance, startService } from '../helpers/crashed-instance.ts';
import { connectPg } from '../helpers/database.ts';
import { driverSettings } from '../helpers/storage.ts';
import {
  allServed, refusedStart, runCli, servedFiles, uploadMedia, uploadTeamFile, uploadTodoFile, type StoredFile,
} from '../helpers/storage-migration.ts';
import { pngLike } from '../helpers/uploads.ts';

// Issue 34: rows written before storage locations were recorded whose objects are lost in every
// store kept a start refusing for good. `storage forget-missing` lists them (--dry-run) and deletes
// them, never while a store it must look in does not answer. Also: the refusal under HTTP_PROCESSES=2.

const instance = await prepareInstance(t, 'fs', `forget-${randomBytes(4).toString('hex')}/`);
// The other driver's store, where a service on s3 would have written rows without a location.
const { STORAGE_DRIVER: _s3Driver, ...s3Settings } = driverSettings('s3');
const env: Record<string, string> = { ...instance.env, ...Object.fromEntries(Object.entries(s3Settings).map(([name, value]) => [name, String(value)])) };

async function query<T = any>(sql: string, params: unknown[] = []): Promise<T[]> {
  const pg = await connectPg(instance.databaseUrl);
  try {
    return (await pg.query(sql, params)).rows;
  } finally {
    await pg.end();
  }
}

const rowCount = async (): Promise<number> =>
  (await query<{ n: number }>('select (select count(*) from media_file) + (select count(*) from team_file) + (select count(*) from todo_file) as n'))[0]!.n * 1;
const usedStorage = async (teamId: string): Promise<number> => Number((await query('select used_storage from team where id = $1', [teamId]))[0].used_storage);

function forget(args: string[], settings = env) {
  return runCli(settings, ['storage', 'forget-missing', ...args]).done;
}

const exitsZero = (result: { code: number | null; stderr: string }) => (result.code === 0 ? 'exits 0' : result.stderr);

const service = await startService(t, { ...instance, env });
const team = await createTeam(service.port, 'Forgetful');
const kept: StoredFile[] = [
  await uploadMedia(service.port, team.teamId, team.key, pngLike(3_000)),
  await uploadMedia(service.port, team.teamId, team.key, pngLike(5_000)),
  await uploadTodoFile(service.port, team.teamId, team.key, pngLike(7_000)),
];
const lostMedia = await uploadMedia(service.port, team.teamId, team.key, pngLike(11_000));
const lostTeamFile = await uploadTeamFile(service.port, team.teamId, team.key, pngLike(13_000));
service.child.kill('SIGTERM');
await service.exited;

// As an earlier version left them: no location recorded; two objects then lost from the disk.
for (const table of ['media_file', 'team_file', 'todo_file']) await query(`update ${table} set storage_location = null`);
const lostKeys = [
  (await query('select storage_key from media_file where id = $1', [lostMedia.id]))[0].storage_key,
  (await query('select storage_key from team_file where id = $1', [lostTeamFile.id]))[0].storage_key,
].sort();
for (const key of lostKeys) await rm(join(instance.dataDir, 'files', ...key.split('/')));
const usedBefore = await usedStorage(team.teamId);

t.test('a start refuses, naming the lost objects and the command that forgets them', async (t) => {
  const refused = await refusedStart(env);
  t.equal(refused.code, 1);
  t.match(refused.output, /does not hold 2 of the service's stored objects \(2 written before storage locations were recorded and not found in fs/);
  t.match(refused.output, '`npm run cli -- storage forget-missing --dry-run` lists them');
  t.notMatch(refused.output, /"msg":"ready"/);
});

t.test('HTTP_PROCESSES=2: the service processes refuse the same way and the supervisor exits 1', async (t) => {
  const refused = await refusedStart({ ...env, HTTP_PROCESSES: '2' });
  t.equal(refused.code, 1);
  t.match(refused.output, /does not hold 2 of the service's stored objects/);
  t.notMatch(refused.output, /"msg":"ready"/);
});

t.test('--dry-run lists the lost objects and deletes nothing', async (t) => {
  const result = await forget(['--dry-run']);
  t.equal(result.code, 0, exitsZero(result));
  const summary = JSON.parse(result.stdout);
  t.match(summary, { location: 'fs', checked: 2, found: 0, forgotten: 0, dryRun: true, next: /without --dry-run/ });
  t.same(summary.missing.map((row: { key: string }) => row.key), lostKeys);
  t.same(summary.missing.map((row: { location: null }) => row.location), [null, null], 'both written before locations were recorded');
  t.equal(await rowCount(), 5, 'every row is still there');
  t.equal(await usedStorage(team.teamId), usedBefore);
});

t.test('a store that does not answer stops it before anything is forgotten; --only-here looks only in the configured store', async (t) => {
  const unreachable = { ...env, S3_ENDPOINT: 'http://127.0.0.1:1' };
  const result = await forget([], unreachable);
  t.equal(result.code, 1);
  const error = JSON.parse(result.stderr.slice(result.stderr.indexOf('{')));
  t.match(error, { status: 503, message: /s3 bucket .* did not answer for .*nothing was forgotten.*--only-here/ });
  t.equal(await rowCount(), 5, 'no row was deleted');

  const onlyHere = await forget(['--dry-run', '--only-here'], unreachable);
  t.equal(onlyHere.code, 0, exitsZero(onlyHere));
  t.same(JSON.parse(onlyHere.stdout).missing.map((row: { key: string }) => row.key), lostKeys);
});

t.test('without --dry-run the rows go, with their bytes and a team log entry; the service then starts', async (t) => {
  const result = await forget([]);
  t.equal(result.code, 0, exitsZero(result));
  t.match(JSON.parse(result.stdout), { checked: 2, found: 0, forgotten: 2, dryRun: false, next: /starts on the configured store/ });
  t.equal(await rowCount(), 3);
  t.equal(await usedStorage(team.teamId), usedBefore - 11_000 - 13_000, 'the lost bytes are no longer counted');
  const log = await query('select action, team_member_id, target_identifier, data from team_log where team_id = $1 and action = $2', [team.teamId, 'TEAM_FILE_DELETED']);
  t.match(log, [{ team_member_id: null, target_identifier: lostTeamFile.id, data: { size: 13_000, reason: /storage forget-missing/ } }], 'logged as deleted by the operator');

  const again = await forget([]);
  t.match(JSON.parse(again.stdout), { checked: 0, found: 0, missing: [], forgotten: 0, next: null }, 'a second run has nothing to do');

  const started = await startService(t, { ...instance, env });
  t.same(await servedFiles(started.port, kept), allServed(kept), 'the files that were not lost are served');
  const gone = await fetch(`http://127.0.0.1:${started.port}${await lostMedia.link(started.port)}`);
  t.equal(gone.status, 404, 'the forgotten file is gone from its link');
  await gone.arrayBuffer();
});
