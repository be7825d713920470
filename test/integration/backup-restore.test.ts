import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { BACKUP_LOCK_KEY } from '../../src/domain/storage-removals/backup-guard.ts';
import { hashContent, loadXxhash } from '../../src/uploads/hashing/content-hash.ts';
import { connectPg, createTestDatabase } from '../helpers/database.ts';
import { dumpData, rowsSortedWithinTables, runCli } from '../helpers/database-dumps.ts';
import { api, spawnService } from '../helpers/service-process.ts';
import { KiB, MiB, multipartBody, pngLike, uploadPath } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';

// Issue 34.4: `backup DIR` while the service runs, takes uploads and deletes files; `restore DIR` into
// a fresh DATA_DIR elsewhere (its embedded PostgreSQL; in the server pass an empty server database)
// gives back every row of the backup's snapshot and every file those rows name, byte for byte. A
// deletion while a backup holds its lock leaves the object for the drain instead of removing it.

t.setTimeout(280_000);

const onServer = process.env.TEST_PG_KIND === 'server';
const root = await mkdtemp(join(tmpdir(), 'media-backup-'));
await chmod(root, 0o755); // the embedded PostgreSQL runs as the postgres user
t.teardown(() => rm(root, { recursive: true, force: true }));
const sourceDir = join(root, 'source');
await mkdir(sourceDir);
const sourceDatabase = await createTestDatabase(t);
const sourceEnv = { DATA_DIR: sourceDir, DATABASE_URL: sourceDatabase };
const service = await spawnService(t, {
  env: {
    PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...sourceEnv, PORT: '0', LOG_LEVEL: 'info', RATE_LIMIT_POINTS: '100000',
    // Files of both places: the object store's and the database's (up to 64 KiB).
    DATABASE_FILE_MAX_BYTES: '65536',
  },
});
// No AUTH_SECRET: the service generates one in DATA_DIR, which the backup carries.
const authSecret = (await readFile(join(sourceDir, 'auth-secret'), 'utf8')).trim();
const created = await api(service.port, 'POST', '/v1/admin/teams', { authSecret }, { name: 'Backup Team' });
const teamId: string = created.body.team.id;
const key: string = created.body.apiKey.key;
await api(service.port, 'PATCH', `/v1/admin/teams/${teamId}/limits`, { authSecret }, { maxMediaFileSize: 100 * MiB, maxTeamStorage: 1024 * 1024 });

let sequence = 0;
async function upload(size: number): Promise<{ status: number; id?: string }> {
  const { body, contentType } = multipartBody([{ content: pngLike(size), fileName: `file-${++sequence}.png` }]);
  const response = await fetch(`http://127.0.0.1:${service.port}${uploadPath(teamId)}`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': contentType }, body,
  });
  const answer = (await response.json()) as { id?: string };
  return { status: response.status, id: answer.id };
}
const remove = (id: string) => api(service.port, 'DELETE', `/v1/cdn/media/${teamId}/delete/${id}`, { authorization: `Bearer ${key}` });
const storageKeyOf = async (id: string) => {
  const client = await connectPg(sourceDatabase);
  try {
    return (await client.query('select storage_key from media_file where id = $1', [id])).rows[0]?.storage_key as string | undefined;
  } finally {
    await client.end();
  }
};

const existing: string[] = [];
// Large files, files for the object store, and small files kept in the database.
for (let index = 0; index < 24; index++) existing.push((await upload(index % 4 === 0 ? 1100 * KiB : index % 2 === 0 ? 96 * KiB : 40 * KiB)).id!);

t.test('a deletion while a backup holds the lock answers at once and leaves the object queued for the drain', async (t) => {
  const id = (await upload(96 * KiB)).id!;
  const storageKey = (await storageKeyOf(id))!;
  const holder = await connectPg(sourceDatabase);
  try {
    await holder.query('select pg_advisory_lock($1)', [BACKUP_LOCK_KEY]);
    t.equal((await remove(id)).status, 200, 'the deletion does not wait for the backup');
    t.ok(existsSync(join(sourceDir, 'files', storageKey)), 'its object is still there for the backup');
    const queued = await holder.query(`select reason from storage_deletion where storage_key = $1`, [storageKey]);
    t.same(queued.rows, [{ reason: 'MEDIA_DELETE' }], 'queued for the drain');
  } finally {
    await holder.end(); // releases the lock
  }
  const other = (await upload(96 * KiB)).id!;
  const otherKey = (await storageKeyOf(other))!;
  t.equal((await remove(other)).status, 200);
  t.notOk(existsSync(join(sourceDir, 'files', otherKey)), 'with no backup running, a deletion removes its object at once');
});

t.test('backup under uploads and deletions; restore elsewhere gives back every row and every file', async (t) => {
  // The load: uploads on two connections and deletions of older files, all through the backup.
  let running = true;
  const outcomes: number[] = [];
  const uploader = async () => {
    while (running) outcomes.push((await upload(outcomes.length % 2 === 0 ? 24 * KiB : 80 * KiB)).status);
  };
  const deleter = async () => {
    while (running && existing.length > 0) {
      outcomes.push((await remove(existing.shift()!)).status);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const load = [uploader(), uploader(), deleter()];
  await eventually(() => outcomes.length >= 6, 20_000);
  const backupDir = join(root, 'backup');
  const backup = await runCli(['backup', backupDir], sourceEnv);
  running = false;
  await Promise.all(load);
  t.equal(backup.code, 0, backup.stderr);
  const manifest = JSON.parse(backup.stdout);
  t.match(manifest, { driver: 'fs', files: { count: Number }, authSecret: true });
  t.ok(outcomes.length > 6 && outcomes.every((status) => status === 201 || status === 200), `every upload and deletion succeeded during the backup (${outcomes.length})`);

  const restoredDir = join(root, 'restored');
  await mkdir(restoredDir);
  await chmod(restoredDir, 0o755);
  const restoredEnv: Record<string, string> = { DATA_DIR: restoredDir, ...(onServer ? { DATABASE_URL: await createTestDatabase(t, { empty: true }) } : {}) };
  const restored = await runCli(['restore', backupDir], restoredEnv);
  t.equal(restored.code, 0, restored.stderr);
  t.match(JSON.parse(restored.stdout), { files: manifest.files, authSecret: 'restored' });
  t.equal((await readFile(join(restoredDir, 'auth-secret'), 'utf8')).trim(), authSecret, 'the operator secret came back');

  const check = join(root, 'restored-export.jsonl.gz');
  const exported = await runCli(['db', 'export', check], restoredEnv);
  t.equal(exported.code, 0, exported.stderr);
  const rows = await dumpData(check);
  t.same(rowsSortedWithinTables(rows), rowsSortedWithinTables(await dumpData(join(backupDir, 'database.jsonl.gz'))), 'every row of the snapshot, as it was');

  // Every file a restored row names is there with the size and hash its row records: in the files,
  // or for a small file kept in the database, in the restored media_content.
  const api64 = await loadXxhash();
  const fileRows: { storage_key: string; storage_location: string; size: string | number; hash: string }[] = [];
  const contents = new Map<string, Buffer>();
  let table = '';
  for (const line of rows) {
    if (line.startsWith('{"table":"')) table = JSON.parse(line).table;
    else if (['media_file', 'team_file', 'todo_file'].includes(table)) fileRows.push(JSON.parse(line));
    else if (table === 'media_content') {
      const row = JSON.parse(line) as { media_id: string; content: string };
      contents.set(row.media_id, Buffer.from(row.content.slice(2), 'hex'));
    }
  }
  const inDatabase = fileRows.filter((row) => row.storage_location === 'db');
  const inFiles = fileRows.filter((row) => row.storage_location !== 'db');
  t.equal(inFiles.length, manifest.files.count, 'one copied file per file row in the object store');
  t.ok(inFiles.length > 10 && inDatabase.length > 10, `files of both places (${inFiles.length} in files, ${inDatabase.length} in the database)`);
  t.equal(contents.size, inDatabase.length, 'the bytes of every small file came back with the database');
  for (const row of inDatabase) {
    const bytes = contents.get(row.storage_key.split('/').pop()!);
    if (!bytes || bytes.length !== Number(row.size) || hashContent(api64, bytes) !== row.hash) t.fail(`${row.storage_key} differs from its row`);
  }
  for (const row of inFiles) {
    const bytes = await readFile(join(restoredDir, 'files', row.storage_key));
    if (bytes.length !== Number(row.size) || hashContent(api64, bytes) !== row.hash) t.fail(`${row.storage_key} differs from its row`);
  }
  t.pass(`${fileRows.length} files match their rows`);
});

t.test('restore refuses an incomplete backup and a database that is not empty; backup refuses a used directory', async (t) => {
  const incomplete = join(root, 'incomplete');
  await mkdir(incomplete);
  await writeFile(join(incomplete, 'database.jsonl.gz'), '');
  const refused = await runCli(['restore', incomplete], { DATA_DIR: join(root, 'elsewhere'), DATABASE_URL: await createTestDatabase(t, { empty: true }) });
  t.equal(refused.code, 1);
  t.match(JSON.parse(refused.stderr), { status: 400, message: /not a complete backup/ });

  const intoUsed = await runCli(['restore', join(root, 'backup')], { DATA_DIR: join(root, 'elsewhere'), DATABASE_URL: sourceDatabase });
  t.equal(intoUsed.code, 1);
  t.match(JSON.parse(intoUsed.stderr), { status: 409, message: /is not empty/ });
  t.notOk(existsSync(join(root, 'elsewhere', 'files')), 'no file was written before the refusal');

  const again = await runCli(['backup', join(root, 'backup')], sourceEnv);
  t.equal(again.code, 1);
  t.match(JSON.parse(again.stderr), { status: 400, message: /is not empty/ });
});
