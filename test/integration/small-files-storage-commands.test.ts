import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { createTeam, prepareInstance, startService } from '../helpers/crashed-instance.ts';
import { connectPg } from '../helpers/database.ts';
import { closeS3Client, driverSettings } from '../helpers/storage.ts';
import { allServed, migrate, runCli, servedFiles, uploadMedia, type StoredFile } from '../helpers/storage-migration.ts';
import { KiB, pngLike } from '../helpers/uploads.ts';

// Issue 38: the storage commands cover the small files kept in the database. A small file stays
// there while DATABASE_FILE_MAX_BYTES still takes it; `storage migrate` moves out the ones above a
// lowered threshold (and all of them at 0), a start on the target switches their rows, `storage
// prune-old` deletes their bytes from the database, and every link serves the same bytes throughout:
// from the database to fs, then everything to s3 (the real Ceph RGW).

t.teardown(closeS3Client);
const root = t;
const keyPrefix = `small-${randomBytes(4).toString('hex')}/`;
const instance = await prepareInstance(t, 'fs', keyPrefix);
const s3Settings = Object.fromEntries(Object.entries(driverSettings('s3')).map(([name, value]) => [name, String(value)]));
const onFs = { ...instance.env, ...s3Settings, STORAGE_DRIVER: 'fs', S3_KEY_PREFIX: keyPrefix, DATABASE_FILE_MAX_BYTES: '65536' };
const onS3 = { ...onFs, STORAGE_DRIVER: 's3' };

async function sql<T = any>(text: string, params: unknown[] = []): Promise<T[]> {
  const pg = await connectPg(instance.databaseUrl);
  try {
    return (await pg.query(text, params)).rows as T[];
  } finally {
    await pg.end();
  }
}

const places = async () => (await sql<{ storage_location: string }>('select storage_location from media_file order by size')).map((row) => row.storage_location);
const contentRows = async () => Number((await sql<{ n: string }>('select count(*) as n from media_content'))[0]!.n);
const fsFiles = async (teamId: string) => (await readdir(join(instance.dataDir, 'files', 'media', teamId)).catch(() => [])).length;

let service = await startService(t, { ...instance, env: onFs });
const team = await createTeam(service.port, 'SmallMovers');
const files: StoredFile[] = [];
// Sorted by size, as places() lists them: two under 2 KiB, two between 2 and 64 KiB, one above.
for (const size of [500, 1_500, 8 * KiB, 40 * KiB, 200 * KiB]) files.push(await uploadMedia(service.port, team.teamId, team.key, pngLike(size)));

t.test('small files are in the database, the large one in fs; a migration leaves the small ones where they are', async (t) => {
  t.same(await places(), ['db', 'db', 'db', 'db', 'fs']);
  const summary = await migrate(t, { ...onFs, DATABASE_FILE_MAX_BYTES: '65536' }, 'fs');
  t.match(summary, { objects: 0, copied: 0, complete: true }, 'nothing to move: every file is where the service would put it');
  t.equal(await contentRows(), 4);
});

t.test('a lowered threshold: migrate moves the small files above it to fs, the start switches them, prune-old frees the database', async (t) => {
  const lowered = { ...onFs, DATABASE_FILE_MAX_BYTES: '2048' };
  service.child.kill('SIGTERM');
  await service.exited;
  const summary = await migrate(t, lowered, 'fs');
  t.match(summary, { objects: 2, copied: 2, from: ['db'], complete: true }, 'the two above 2 KiB are copied from the database');
  t.same(await places(), ['db', 'db', 'db', 'db', 'fs'], 'nothing switched before a service starts on the target');
  service = await startService(root, { ...instance, env: lowered });
  t.same(await places(), ['db', 'db', 'fs', 'fs', 'fs'], 'the start switched the copied rows to fs');
  t.same(await servedFiles(service.port, files), allServed(files), 'every link serves the same bytes');
  t.equal(await contentRows(), 4, 'the database keeps the old bytes until prune-old');
  const pruned = await runCli(lowered, ['storage', 'prune-old']).done;
  t.equal(pruned.code, 0, pruned.stderr);
  t.match(JSON.parse(pruned.stdout), { removed: 2 });
  t.equal(await contentRows(), 2, 'prune-old deleted the moved files\' bytes from the database');
  t.equal(await fsFiles(team.teamId), 3);
  t.same(await servedFiles(service.port, files), allServed(files), 'and every link still serves the same bytes');
});

t.test('at 0 every file moves: from the database and fs to s3, byte-identical', async (t) => {
  const off = { ...onS3, DATABASE_FILE_MAX_BYTES: '0' };
  service.child.kill('SIGTERM');
  await service.exited;
  const summary = await migrate(t, off, 's3');
  t.match(summary, { objects: 5, copied: 5, from: ['db', 'fs'], complete: true });
  service = await startService(root, { ...instance, env: off });
  t.same(await places(), Array(5).fill(`s3:${s3Settings.S3_BUCKET}/${keyPrefix}`), 'every row lives in s3');
  t.same(await servedFiles(service.port, files), allServed(files), 'every link serves the same bytes from s3');
  const pruned = await runCli(off, ['storage', 'prune-old']).done;
  t.equal(pruned.code, 0, pruned.stderr);
  t.equal(await contentRows(), 0, 'nothing left in the database');
  t.equal(await fsFiles(team.teamId), 0, 'nothing left in fs');
  const small = await uploadMedia(service.port, team.teamId, team.key, pngLike(700));
  t.same(await servedFiles(service.port, [small]), allServed([small]));
  t.equal(await contentRows(), 0, 'at 0 a new small file goes to the object store too');
});
