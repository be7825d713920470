import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ListMultipartUploadsCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { SettingName } from '../../src/config/settings.ts';

export type Driver = 'fs' | 's3';

/**
 * The drivers a file that runs in both passes tries: both in the first; in the second pass (against
 * TEST_DATABASE_URL, test/server-pass.ts) fs only, because that pass checks the SQL, and the SQL of
 * an upload, a sweep or a deletion is the same whatever driver holds the bytes.
 */
export const DRIVERS_OF_THIS_PASS: readonly Driver[] = process.env.TEST_PG_KIND === 'server' ? ['fs'] : ['fs', 's3'];

/** The real S3-compatible server of the tests (Ceph RGW, started by scripts/s3-test-server.sh and .ci/run). */
export const s3 = {
  endpoint: process.env.TEST_S3_ENDPOINT ?? 'http://127.0.0.1:7480',
  region: process.env.TEST_S3_REGION ?? 'us-east-1',
  bucket: process.env.TEST_S3_BUCKET ?? 'media-test',
  accessKeyId: process.env.TEST_S3_ACCESS_KEY_ID ?? 'media-test-access',
  secretAccessKey: process.env.TEST_S3_SECRET_ACCESS_KEY ?? 'media-test-secret-0123456789abcdef',
};

export function driverSettings(driver: Driver): Partial<Record<SettingName, unknown>> {
  if (driver === 'fs') return { STORAGE_DRIVER: 'fs' };
  return {
    STORAGE_DRIVER: 's3',
    S3_ENDPOINT: s3.endpoint,
    S3_REGION: s3.region,
    S3_BUCKET: s3.bucket,
    S3_ACCESS_KEY_ID: s3.accessKeyId,
    S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
    S3_FORCE_PATH_STYLE: true,
  };
}

let client: S3Client | null = null;
/** A client straight to the test S3 server, bypassing the service; closed by closeS3Client(). */
export function s3Client(): S3Client {
  client ??= new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  return client;
}

export function closeS3Client(): void {
  client?.destroy();
  client = null;
}

async function walk(dir: string): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const files: string[] = [];
  for (const entry of entries) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await walk(full)));
    else files.push(full);
  }
  return files;
}

export interface StoredObjects {
  /** Objects of the team. */
  objects: string[];
  /** Unfinished writes: temp files (fs) or multipart uploads (s3) of the team. */
  inProgress: string[];
}

/** What storage holds for a team under a kind's key prefix (media, team-files, todo-files), read straight from the storage, not through the service. */
export async function storedObjects(driver: Driver, dataDir: string, teamId: string, kind = 'media'): Promise<StoredObjects> {
  if (driver === 'fs') {
    const objects = await walk(join(dataDir, 'files', kind, teamId));
    const temps = await walk(join(dataDir, 'files', '.uploads'));
    return { objects, inProgress: temps };
  }
  const prefix = `${kind}/${teamId}/`;
  const listed = await s3Client().send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix }));
  const uploads = await s3Client().send(new ListMultipartUploadsCommand({ Bucket: s3.bucket, Prefix: prefix }));
  return {
    objects: (listed.Contents ?? []).map((object) => object.Key!),
    inProgress: (uploads.Uploads ?? []).map((upload) => upload.Key!),
  };
}

/** Polls until storage holds exactly `objects` objects of the team and nothing in progress (S3 aborts are asynchronous). */
export async function settledObjects(driver: Driver, dataDir: string, teamId: string, objects: number, kind = 'media'): Promise<StoredObjects> {
  let last = await storedObjects(driver, dataDir, teamId, kind);
  for (let attempt = 0; attempt < 50 && (last.objects.length !== objects || last.inProgress.length > 0); attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    last = await storedObjects(driver, dataDir, teamId, kind);
  }
  return last;
}

export async function fileSize(path: string): Promise<number> {
  return (await stat(path)).size;
}
