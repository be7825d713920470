import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import t from 'tap';
import { createTeam, prepareInstance, startService } from '../helpers/crashed-instance.ts';
import { connectPg } from '../helpers/database.ts';
import { startS3FaultProxy } from '../helpers/s3-fault-proxy.ts';
import { closeS3Client, driverSettings, s3, s3Client } from '../helpers/storage.ts';
import {
  allServed, migrate, refusedStart, runCli, servedFiles, uploadMedia, uploadTeamFile, uploadTodoFile, type StoredFile,
} from '../helpers/storage-migration.ts';
import { MiB, pngLike } from '../helpers/uploads.ts';

// Issue 34: an fs service moved to S3 (the real Ceph RGW) while it keeps serving. The start on the
// wrong driver refuses; `storage migrate --to s3` is killed -9 in the middle of a multipart copy and
// run again (nothing copied twice); uploads and a deletion during the migration are caught by the
// next pass; after the switch every link serves the same bytes; prune-old removes the fs copies.

t.teardown(closeS3Client);
const root = t;

const keyPrefix = `migrate-${randomBytes(4).toString('hex')}/`;
const instance = await prepareInstance(t, 'fs', keyPrefix);
const proxy = await startS3FaultProxy(s3.endpoint);
t.teardown(() => proxy.close());
const s3Settings = Object.fromEntries(Object.entries(driverSettings('s3')).map(([name, value]) => [name, String(value)]));
/** The fs service's settings plus the S3 ones the migration reads (through the proxy, which counts and holds its requests). */
const cliEnv = { ...instance.env, ...s3Settings, STORAGE_DRIVER: 'fs', S3_KEY_PREFIX: keyPrefix, S3_ENDPOINT: proxy.endpoint };
const onS3 = { ...instance.env, ...s3Settings, S3_KEY_PREFIX: keyPrefix };

async function sql<T = any>(text: string, params: unknown[] = []): Promise<T[]> {
  const pg = await connectPg(instance.databaseUrl);
  try {
    return (await pg.query(text, params)).rows as T[];
  } finally {
    await pg.end();
  }
}

/** Object writes (a PutObject, or a multipart upload's creation) the migration sent, per key without the prefix. */
function writesFrom(index: number): string[] {
  return proxy.forwardedRequests.slice(index)
    .filter((request) => request.operation === 'PutObject' || request.operation === 'CreateMultipartUpload')
    .map((request) => request.key.slice(keyPrefix.length)).sort();
}

const files: StoredFile[] = [];
let first = await startService(t, instance);
const team = await createTeam(first.port, 'Movers');
for (const size of [1_000, 20_000, 300_000]) files.push(await uploadMedia(first.port, team.teamId, team.key, pngLike(size)));
// Past an 8 MiB S3 part: its copy is a multipart upload, the one the crash interrupts.
const big = await uploadMedia(first.port, team.teamId, team.key, pngLike(9 * MiB));
files.push(big);
files.push(await uploadTeamFile(first.port, team.teamId, team.key, pngLike(5_000)));
files.push(await uploadTodoFile(first.port, team.teamId, team.key, pngLike(7_000)));

t.test('rows record where their objects were written', async (t) => {
  const rows = await sql(`select storage_location from media_file union all select storage_location from team_file union all select storage_location from todo_file`);
  t.same(rows.map((row) => row.storage_location), Array(files.length).fill('fs'));
});

t.test('rows from before locations were recorded: the start on s3 refuses, the start on fs claims them', async (t) => {
  first.child.kill('SIGTERM');
  await first.exited;
  // As an installation upgraded to this version finds them.
  for (const table of ['media_file', 'team_file', 'todo_file']) await sql(`update ${table} set storage_location = null`);
  const refused = await refusedStart(onS3);
  t.equal(refused.code, 1, 'exits 1');
  t.match(refused.output, /Invalid configuration: STORAGE_DRIVER="s3" names a store that does not hold 6 of the service's stored objects \(6 written before storage locations were recorded and not found in s3 bucket/);
  t.match(refused.output, 'npm run cli -- storage migrate --to s3');
  t.notMatch(refused.output, /"msg":"ready"/, 'never ready');
  // On the file's own test: a subtest's teardown would kill it when the subtest ends.
  first = await startService(root, instance);
  const rows = await sql(`select storage_location from media_file union all select storage_location from team_file union all select storage_location from todo_file`);
  t.same(rows.map((row) => row.storage_location), Array(files.length).fill('fs'), 'found in fs, so recorded there');
  t.ok(first.output.some((line) => line.includes('"claimed":6')), 'the start logged what it claimed');
});

t.test('a target the settings do not reach is refused before any copy', async (t) => {
  const wrongBucket = await runCli({ ...cliEnv, S3_BUCKET: 'no-such-bucket-for-migrate' }, ['storage', 'migrate', '--to', 's3']).done;
  t.equal(wrongBucket.code, 1);
  t.match(JSON.parse(wrongBucket.stderr.slice(wrongBucket.stderr.indexOf('{'))), { status: 400, message: /S3_BUCKET: the bucket "no-such-bucket-for-migrate" does not exist/ });
  const wrongDriver = await runCli(cliEnv, ['storage', 'migrate', '--to', 'ftp']).done;
  t.equal(wrongDriver.code, 1);
  t.match(wrongDriver.stderr, '--to must be fs or s3');
  t.same(await sql('select storage_key from storage_copy'), [], 'nothing recorded');
});

let verifiedBeforeKill = 0;
t.test('a migration killed -9 during a multipart copy, then run again, copies each object once', async (t) => {
  const bigKey = `media/${team.teamId}/${big.id}`;
  const held = proxy.hold((request) => request.operation === 'UploadPart' && request.key === `${keyPrefix}${bigKey}` && request.partNumber === 2);
  const killed = runCli(cliEnv, ['storage', 'migrate', '--to', 's3']);
  await held;
  // A copy is under way, and the fs service takes a new upload meanwhile: the next pass copies it.
  files.push(await uploadMedia(first.port, team.teamId, team.key, pngLike(2_000)));
  killed.child.kill('SIGKILL');
  t.equal((await killed.done).signal, 'SIGKILL');
  proxy.release();
  const copies = await sql('select storage_key, verified from storage_copy');
  verifiedBeforeKill = copies.filter((copy) => copy.verified).length;
  t.match(copies.find((copy) => copy.storage_key === bigKey), { verified: false }, 'the interrupted copy is recorded as started, not verified');
  const leftovers = await s3Client().send(new ListMultipartUploadsCommand({ Bucket: s3.bucket, Prefix: keyPrefix }));
  t.equal(leftovers.Uploads?.length, 1, 'the kill left a multipart upload behind');

  const verifiedKeys = new Set(copies.filter((copy) => copy.verified).map((copy) => copy.storage_key));

  const mark = proxy.forwardedRequests.length;
  const second = await migrate(t, cliEnv, 's3');
  t.match(second, { to: `s3:${s3.bucket}/${keyPrefix}`, from: ['fs'], objects: files.length, alreadyCopied: verifiedBeforeKill, copied: files.length - verifiedBeforeKill, failed: [], missing: [], complete: true });
  const allKeys = (await sql('select storage_key from storage_copy where verified')).map((row) => row.storage_key as string);
  t.equal(allKeys.length, files.length, 'every object has a verified copy');
  t.same(writesFrom(mark), allKeys.filter((key) => !verifiedKeys.has(key)).sort(), 'the second run wrote exactly the objects not verified before, each once');
  const after = await s3Client().send(new ListMultipartUploadsCommand({ Bucket: s3.bucket, Prefix: keyPrefix }));
  t.equal(after.Uploads?.length ?? 0, 0, 'the killed run\'s multipart upload was aborted');
  t.same(await servedFiles(first.port, files), allServed(files), 'the fs service still serves every file');
});

t.test('the final pass after the stop copies only what is new and drops the copy of a deleted file', async (t) => {
  files.push(await uploadTeamFile(first.port, team.teamId, team.key, pngLike(3_000)));
  const gone = files.splice(0, 1)[0]!;
  const deleted = await fetch(`http://127.0.0.1:${first.port}/v1/cdn/media/${team.teamId}/delete/${gone.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${team.key}` } });
  t.equal(deleted.status, 200);
  first.child.kill('SIGTERM');
  await first.exited;
  const mark = proxy.forwardedRequests.length;
  const last = await migrate(t, cliEnv, 's3');
  t.match(last, { copied: 1, alreadyCopied: files.length - 1, removedOrphans: 1, complete: true });
  t.equal(writesFrom(mark).length, 1, 'one object written');
  const again = await migrate(t, cliEnv, 's3');
  t.match(again, { copied: 0, alreadyCopied: files.length, removedOrphans: 0, complete: true }, 'a run with nothing new copies nothing');
});

t.test('after the switch every link serves identical bytes from s3; prune-old removes the fs copies', async (t) => {
  const onS3Service = await startService(t, { ...instance, env: onS3 });
  t.same(await servedFiles(onS3Service.port, files), allServed(files), 'every media link, team file and to-do file');
  const rows = await sql(`select storage_location from media_file union all select storage_location from team_file union all select storage_location from todo_file`);
  t.same(new Set(rows.map((row) => row.storage_location)), new Set([`s3:${s3.bucket}/${keyPrefix}`]), 'every row now lives in the bucket');
  t.ok(onS3Service.output.some((line) => line.includes('served from their verified copies')), 'the start logged the switch');

  const pruned = await runCli(onS3, ['storage', 'prune-old']).done;
  t.equal(pruned.code, 0, pruned.stderr);
  t.match(JSON.parse(pruned.stdout), { location: `s3:${s3.bucket}/${keyPrefix}`, removed: files.length, notSwitched: 0 });
  const left = await readdir(join(instance.dataDir, 'files'), { recursive: true, withFileTypes: true });
  t.same(left.filter((entry) => entry.isFile()).map((entry) => entry.name), [], 'no object file left on fs');
  t.same(await servedFiles(onS3Service.port, files), allServed(files), 'still served after the prune');
  onS3Service.child.kill('SIGTERM');
  await onS3Service.exited;

  const backOnFs = await refusedStart(instance.env);
  t.equal(backOnFs.code, 1, 'and a start back on fs refuses');
  t.match(backOnFs.output, `STORAGE_DRIVER="fs" names a store that does not hold ${files.length} of the service's stored objects (${files.length} in s3 bucket "${s3.bucket}" under the key prefix "${keyPrefix}")`);
  t.match(backOnFs.output, 'npm run cli -- storage migrate --to fs');
});
