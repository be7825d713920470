import { randomBytes } from 'node:crypto';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import t from 'tap';
import { createTeam, prepareInstance, startService } from '../helpers/crashed-instance.ts';
import { connectPg } from '../helpers/database.ts';
import { closeS3Client, s3, s3Client } from '../helpers/storage.ts';
import {
  allServed, migrate, refusedStart, runCli, servedFiles, uploadMedia, uploadTeamFile, uploadTodoFile, type StoredFile,
} from '../helpers/storage-migration.ts';
import { pngLike } from '../helpers/uploads.ts';

// Issue 34, the other direction: a service on S3 (the real Ceph RGW) moved to fs while it keeps
// serving, then switched, then the bucket's copies pruned. Also the file of the second pass of
// `npm test` for the SQL of storage-placement.ts and copy-ledger.ts.

t.teardown(closeS3Client);

const keyPrefix = `migrate-${randomBytes(4).toString('hex')}/`;
const instance = await prepareInstance(t, 's3', keyPrefix);
const onFs = { ...instance.env, STORAGE_DRIVER: 'fs' };
const location = `s3:${s3.bucket}/${keyPrefix}`;

async function locations(): Promise<string[]> {
  const pg = await connectPg(instance.databaseUrl);
  try {
    const { rows } = await pg.query('select storage_location from media_file union all select storage_location from team_file union all select storage_location from todo_file');
    return rows.map((row) => row.storage_location);
  } finally {
    await pg.end();
  }
}

async function bucketObjects(): Promise<string[]> {
  const listed = await s3Client().send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: keyPrefix }));
  return (listed.Contents ?? []).map((object) => object.Key!);
}

t.test('s3 to fs: copied while serving, switched by a start on fs, pruned', async (t) => {
  const service = await startService(t, instance);
  const team = await createTeam(service.port, 'Homeward');
  const files: StoredFile[] = [
    await uploadMedia(service.port, team.teamId, team.key, pngLike(4_000)),
    await uploadMedia(service.port, team.teamId, team.key, pngLike(70_000)),
    await uploadTeamFile(service.port, team.teamId, team.key, pngLike(6_000)),
    await uploadTodoFile(service.port, team.teamId, team.key, pngLike(8_000)),
  ];
  t.same(await locations(), Array(files.length).fill(location), 'rows record the bucket and prefix they were written to');

  // The service keeps running on s3 while the cli copies.
  const copied = await migrate(t, instance.env, 'fs');
  t.match(copied, { to: 'fs', from: [location], objects: files.length, alreadyCopied: 0, copied: files.length, failed: [], missing: [], complete: true });
  t.same(await servedFiles(service.port, files), allServed(files), 'the s3 service still serves every file');
  t.same(await locations(), Array(files.length).fill(location), 'nothing moves before a service starts on fs');

  const early = await runCli(instance.env, ['storage', 'prune-old']).done;
  t.equal(early.code, 0, early.stderr);
  t.match(JSON.parse(early.stdout), { location, removed: 0 }, 'prune-old on the old store removes nothing');
  t.equal((await bucketObjects()).length, files.length);

  service.child.kill('SIGTERM');
  await service.exited;
  const otherPrefix = await refusedStart({ ...instance.env, S3_KEY_PREFIX: `${keyPrefix}elsewhere/` });
  t.equal(otherPrefix.code, 1, 'a start on another key prefix of the bucket refuses');
  t.match(otherPrefix.output, `S3_KEY_PREFIX="${keyPrefix}elsewhere/" names a store that does not hold 4 of the service's stored objects (4 in ${`s3 bucket "${s3.bucket}" under the key prefix "${keyPrefix}"`})`);
  t.match(otherPrefix.output, `Or set S3_KEY_PREFIX back to "${keyPrefix}"`);

  const onFsService = await startService(t, { ...instance, env: onFs });
  t.same(await locations(), Array(files.length).fill('fs'), 'the start on fs moved every row to its verified copy');
  t.same(await servedFiles(onFsService.port, files), allServed(files), 'every link serves identical bytes from fs');

  const pruned = await runCli(onFs, ['storage', 'prune-old']).done;
  t.equal(pruned.code, 0, pruned.stderr);
  t.match(JSON.parse(pruned.stdout), { location: 'fs', removed: files.length, removedOrphans: 0, notSwitched: 0, next: null });
  t.same(await bucketObjects(), [], 'the bucket holds none of the old copies');
  t.same(await servedFiles(onFsService.port, files), allServed(files), 'still served after the prune');
});
