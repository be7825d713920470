import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { StoredFile } from './file-copy.ts';

/**
 * A backup directory (`backup DIR`):
 *
 *   database.jsonl.gz   the database from one snapshot (dump-format.ts, the same file as `db export`)
 *   files.jsonl         the files the snapshot's rows name: {"key","size","hash"} per line (fs driver)
 *   files/<key>         their bytes, each checked against its row's size and hash (fs driver)
 *   auth-secret         DATA_DIR/auth-secret, when the operator secret was generated there
 *   manifest.json       written last: a directory without it is not a complete backup
 */

export const BACKUP_FORMAT = 'media-upload-service-backup';
export const BACKUP_FORMAT_VERSION = 1;

export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  formatVersion: number;
  createdAt: string;
  /** The schema version: the migrations applied to the database backed up. */
  migrations: string[];
  driver: 'fs' | 's3';
  /** The files copied (fs driver); null when the backup holds the database only (s3: the bucket is backed up on its own). */
  files: { count: number; bytes: number } | null;
  authSecret: boolean;
}

export const backupPaths = (directory: string) => ({
  database: path.join(directory, 'database.jsonl.gz'),
  files: path.join(directory, 'files.jsonl'),
  authSecret: path.join(directory, 'auth-secret'),
  manifest: path.join(directory, 'manifest.json'),
});

/** The manifest, or null when there is none or it is not this service's. */
export async function readManifest(directory: string): Promise<BackupManifest | null> {
  const text = await readFile(backupPaths(directory).manifest, 'utf8').catch(() => null);
  if (text === null) return null;
  try {
    const manifest = JSON.parse(text) as BackupManifest;
    return manifest.format === BACKUP_FORMAT && manifest.formatVersion === BACKUP_FORMAT_VERSION ? manifest : null;
  } catch {
    return null;
  }
}

export async function readFileList(directory: string): Promise<StoredFile[]> {
  const text = await readFile(backupPaths(directory).files, 'utf8');
  return text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as StoredFile);
}
