import { chmod, copyFile, mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { badRequest } from '../errors/errors.ts';
import type { ObjectStore } from '../storage/object-store.ts';
import { backupPaths, readFileList, readManifest } from './backup-layout.ts';
import { checkFileSchema, checkImport, importDatabase, type ImportSummary } from './database-import.ts';
import { copyFromBackup, FileMismatchError, forEachLimited } from './file-copy.ts';

const COPY_CONCURRENCY = 4;

export interface RestoreOptions {
  databaseUrl: string;
  store: ObjectStore;
  directory: string;
  dataDir: string;
}

export interface RestoreSummary {
  directory: string;
  database: ImportSummary;
  files: { count: number; bytes: number } | null;
  /** What happened to the backed-up operator secret: written to DATA_DIR, kept (DATA_DIR has its own), or none in the backup. */
  authSecret: 'restored' | 'kept' | 'none';
  /** For a backup without files (s3): where they are to come from. */
  note?: string;
}

/**
 * `restore DIR` into an empty database (DATABASE_URL, or the embedded one of a fresh DATA_DIR) and the
 * configured storage: checks everything that can refuse first (a complete backup, a schema this version
 * knows, an intact database file, an empty target), then writes the files (each checked against its
 * row's size and hash again), then loads the database as `db import` does.
 */
export async function restoreBackup(options: RestoreOptions): Promise<RestoreSummary> {
  const { directory, store } = options;
  const manifest = await readManifest(directory);
  if (!manifest) throw badRequest(`${directory} is not a complete backup of this service (no valid manifest.json)`, directory);
  const paths = backupPaths(directory);
  checkFileSchema(manifest.migrations, `The backup in ${directory}`);
  const client = new pg.Client({ connectionString: options.databaseUrl });
  await client.connect();
  try {
    await checkImport(paths.database, client);
  } finally {
    await client.end();
  }

  if (manifest.files) {
    const files = await readFileList(directory);
    await forEachLimited(files, COPY_CONCURRENCY, (file) => copyFromBackup(store, file, directory)).catch((error: unknown) => {
      if (error instanceof FileMismatchError || (error as NodeJS.ErrnoException).code === 'ENOENT') {
        throw badRequest(`The backup in ${directory} is damaged: ${(error as Error).message}; nothing was loaded into the database`, directory);
      }
      throw error;
    });
  }
  const database = await importDatabase(options.databaseUrl, paths.database);
  // A backup holds no thumbnails nor resized images (they are made again from the files): the restored service remakes them.
  if (manifest.files) await requeueThumbnails(options.databaseUrl);
  const authSecret = manifest.authSecret ? await restoreAuthSecret(paths.authSecret, options.dataDir) : 'none';
  return {
    directory, database, files: manifest.files, authSecret,
    ...(manifest.files ? {} : { note: 'This backup holds the database only (it was taken on the s3 driver): the files are in the bucket (docs/operations.md, "Backup and restore")' }),
  };
}

async function restoreAuthSecret(backedUp: string, dataDir: string): Promise<'restored' | 'kept'> {
  const target = path.join(dataDir, 'auth-secret');
  const existing = await readFile(target, 'utf8').catch(() => null);
  if (existing !== null) return 'kept';
  await mkdir(dataDir, { recursive: true });
  await copyFile(backedUp, target);
  await chmod(target, 0o600);
  return 'restored';
}

async function requeueThumbnails(databaseUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`update media_file set thumbnail_status = 'pending', thumbnail_attempts = 0 where thumbnail_status = 'ready'`);
    // Resized images are made again on their next request.
    await client.query('delete from media_transform');
  } finally {
    await client.end();
  }
}
