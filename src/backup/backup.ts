import { copyFile, mkdir, readdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { BACKUP_LOCK_KEY } from '../domain/storage-removals/backup-guard.ts';
import { badRequest, conflict } from '../errors/errors.ts';
import { isStorageError, type ObjectStore } from '../storage/object-store.ts';
import { BACKUP_FORMAT, BACKUP_FORMAT_VERSION, backupPaths, type BackupManifest } from './backup-layout.ts';
import { beginSnapshot, writeDump } from './database-export.ts';
import { copyToBackup, FileMismatchError, forEachLimited, type StoredFile } from './file-copy.ts';

/** Files copied at once. */
const COPY_CONCURRENCY = 4;

/**
 * Every stored file a row names: media, team files and to-do files (tus uploads in progress are not
 * files yet). Not the small media files kept in the database: the dump holds their bytes.
 */
const FILES_SQL = `
select storage_key as key, size::text as size, hash from media_file where storage_location is distinct from 'db'
union all select storage_key, size::text, hash from team_file
union all select storage_key, size::text, hash from todo_file
order by key`;

export interface BackupOptions {
  databaseUrl: string;
  store: ObjectStore;
  directory: string;
  dataDir: string;
}

/**
 * `backup DIR` while the service runs and takes uploads: holds the backup lock (backup-guard.ts) so that
 * no deletion removes an object from here on, takes one snapshot of the database (written as `db export`
 * writes it, with the list of the files its rows name), and (fs) copies each of those files, checked
 * against its row's size and hash. Uploads after the snapshot are not in it, and their files not copied;
 * files deleted after it stay until the lock is released. The manifest, written last, marks it complete.
 */
export async function takeBackup(options: BackupOptions): Promise<BackupManifest & { directory: string; database: { tables: number; rows: number } }> {
  const { directory, store } = options;
  await prepareDirectory(directory);
  const paths = backupPaths(directory);
  const client = new pg.Client({ connectionString: options.databaseUrl });
  await client.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [BACKUP_LOCK_KEY]);
    await beginSnapshot(client);
    const dump = await writeDump(client, paths.database);
    const migrations = (await client.query<{ name: string }>('select name from mikro_orm_migrations order by id')).rows.map((row) => row.name);
    const files: StoredFile[] = (await client.query<{ key: string; size: string; hash: string | null }>(FILES_SQL)).rows
      .map((row) => ({ key: row.key, size: Number(row.size), hash: row.hash }));
    await client.query('commit');
    let copied: BackupManifest['files'] = null;
    if (store.driver === 'fs') {
      await writeFile(paths.files, files.map((file) => `${JSON.stringify(file)}\n`).join(''));
      await forEachLimited(files, COPY_CONCURRENCY, (file) => copyToBackup(store, file, directory)).catch((error: unknown) => {
        // A file missing or not matching its row: the storage lost or changed it, and no backup can hold it as its row says.
        if (error instanceof FileMismatchError || isStorageError(error)) {
          throw conflict(`The backup is incomplete (no manifest.json): a stored file does not match its row: ${(error as Error).message}`, directory);
        }
        throw error;
      });
      copied = { count: files.length, bytes: files.reduce((sum, file) => sum + file.size, 0) };
    }
    const authSecret = await copyFile(path.join(options.dataDir, 'auth-secret'), paths.authSecret).then(() => true, () => false);
    const manifest: BackupManifest = {
      format: BACKUP_FORMAT, formatVersion: BACKUP_FORMAT_VERSION, createdAt: new Date().toISOString(),
      migrations, driver: store.driver as 'fs' | 's3', files: copied, authSecret,
    };
    await writeFile(`${paths.manifest}.partial`, `${JSON.stringify(manifest, null, 2)}\n`);
    await rename(`${paths.manifest}.partial`, paths.manifest);
    return { directory, ...manifest, database: { tables: dump.tables, rows: dump.rows } };
  } finally {
    // Ending the session releases the lock: the deletions deferred meanwhile are the drain's from here.
    await client.end();
  }
}

/** A backup goes into a new or empty directory: never over another backup. */
async function prepareDirectory(directory: string): Promise<void> {
  await mkdir(directory, { recursive: true });
  const entries = await readdir(directory);
  if (entries.length > 0) throw badRequest(`The backup directory ${directory} is not empty: name a new or empty directory`, directory);
}
