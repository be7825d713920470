/**
 * The S3 server of the bench (by default the project's Ceph RGW test server, see
 * scripts/s3-test-server.sh): settings, the bench's own bucket, clean-up, and a guard that keeps
 * the RGW's in-memory OSD from filling up.
 *
 * The test RGW keeps its data in RAM (memstore, 4 GiB by default) and blocks every write once
 * 95 % is used; space of deleted objects comes back only through RGW's garbage collector. So the
 * bench deletes its objects after every phase, and before an S3 phase reserves the bytes the phase
 * may write (reserveSpace): at most what keeps the cluster below BENCH_S3_MAX_USED_RATIO (default
 * 0.8) of its OSD, after asking RGW to collect garbage now (`radosgw-admin gc process
 * --include-all`). The load client stops starting uploads at that many bytes; a phase for which
 * too little fits is skipped and reported as such. The guard is only active when the cluster's
 * ceph.conf is found ($S3_TEST_DIR/ceph.conf, default /tmp/media-s3-test/ceph.conf) and `ceph`
 * is installed.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  AbortMultipartUploadCommand,
  CreateBucketCommand,
  DeleteObjectsCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
} from '@aws-sdk/client-s3';

const run = promisify(execFile);

export interface S3Settings {
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/** The test server's settings (the same defaults and TEST_S3_* variables as the tests); BENCH_S3_BUCKET names the bench's bucket. */
export function s3Settings(): S3Settings {
  return {
    endpoint: process.env.TEST_S3_ENDPOINT ?? 'http://127.0.0.1:7480',
    region: process.env.TEST_S3_REGION ?? 'us-east-1',
    bucket: process.env.BENCH_S3_BUCKET ?? 'media-bench',
    accessKeyId: process.env.TEST_S3_ACCESS_KEY_ID ?? 'media-test-access',
    secretAccessKey: process.env.TEST_S3_SECRET_ACCESS_KEY ?? 'media-test-secret-0123456789abcdef',
  };
}

export function s3Client(settings: S3Settings): S3Client {
  return new S3Client({
    endpoint: settings.endpoint,
    region: settings.region,
    forcePathStyle: true,
    credentials: { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000, httpAgent: new http.Agent({ keepAlive: true, maxSockets: 16 }) },
  });
}

/**
 * Makes sure the bench's bucket exists (its own bucket, so that no test's crash sweeper aborts
 * the bench's multipart uploads). Falls back to the tests' bucket when it cannot be created.
 */
export async function ensureBucket(client: S3Client, settings: S3Settings): Promise<S3Settings> {
  try {
    await client.send(new CreateBucketCommand({ Bucket: settings.bucket }), { abortSignal: AbortSignal.timeout(15_000) });
    return settings;
  } catch (error) {
    const name = (error as Error).name;
    if (name === 'BucketAlreadyOwnedByYou' || name === 'BucketAlreadyExists') return settings;
    if (name === 'AbortError' || name === 'TimeoutError') throw error;
    const fallback = process.env.TEST_S3_BUCKET ?? 'media-test';
    console.warn(`bench: cannot create bucket ${settings.bucket} (${name}); using ${fallback}`);
    return { ...settings, bucket: fallback };
  }
}

/** Deletes every object and aborts every multipart upload under `prefix`; returns the bytes deleted. */
export async function emptyPrefix(client: S3Client, bucket: string, prefix: string): Promise<number> {
  let bytes = 0;
  let token: string | undefined;
  do {
    const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    const objects = listed.Contents ?? [];
    for (const object of objects) bytes += object.Size ?? 0;
    if (objects.length > 0) {
      await client.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: objects.map((object) => ({ Key: object.Key! })), Quiet: true } }));
    }
    token = listed.IsTruncated ? listed.NextContinuationToken : undefined;
  } while (token);
  const uploads = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix }));
  for (const upload of uploads.Uploads ?? []) {
    await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: upload.Key!, UploadId: upload.UploadId! })).catch(() => undefined);
  }
  return bytes;
}

export interface ClusterSpace {
  total: number;
  used: number;
}

function cephConf(): string | null {
  const conf = join(process.env.S3_TEST_DIR ?? '/tmp/media-s3-test', 'ceph.conf');
  return existsSync(conf) ? conf : null;
}

/** Used and total raw bytes of the test cluster's OSD, or null when there is no such cluster here. */
export async function clusterSpace(): Promise<ClusterSpace | null> {
  const conf = cephConf();
  if (!conf) return null;
  try {
    const { stdout } = await run('ceph', ['-c', conf, '--connect-timeout', '5', 'df', '-f', 'json'], { timeout: 15_000 });
    const stats = (JSON.parse(stdout) as { stats: { total_bytes: number; total_used_raw_bytes: number } }).stats;
    return { total: stats.total_bytes, used: stats.total_used_raw_bytes };
  } catch {
    return null;
  }
}

/** Lets RGW's garbage collector free deleted objects now rather than in 30-60 s. */
export async function collectGarbage(): Promise<void> {
  const conf = cephConf();
  if (!conf) return;
  await run('radosgw-admin', ['-c', conf, 'gc', 'process', '--include-all'], { timeout: 60_000 }).catch(() => undefined);
}

const MAX_USED_RATIO = Number(process.env.BENCH_S3_MAX_USED_RATIO ?? 0.8);
/** `ceph df` costs most of a second of CPU: between reads, the bytes handed out since are added to the last reading. */
const REREAD_MS = 15_000;

let last: ClusterSpace | null = null;
let lastAt = 0;
let handedOut = 0;

function room(space: ClusterSpace): number {
  return Math.max(0, Math.floor(space.total * MAX_USED_RATIO - space.used - handedOut));
}

/**
 * Bytes a phase may write to the test cluster: up to `bytes`, as long as the cluster stays below
 * MAX_USED_RATIO of its OSD, counting what earlier phases were handed out since the last reading.
 * When less than `minBytes` fits, lets RGW collect garbage and reads again, for up to `waitMs`;
 * then answers 0 (skip the phase). Without a cluster to watch, all of `bytes`.
 */
export async function reserveSpace(bytes: number, minBytes: number, waitMs: number): Promise<{ allowed: number; space: ClusterSpace | null; broken?: true }> {
  if (!cephConf()) return { allowed: bytes, space: null };
  const fresh = last !== null && Date.now() - lastAt < REREAD_MS;
  if (!fresh || room(last!) < Math.max(minBytes, Math.min(bytes, 1))) {
    const end = Date.now() + waitMs;
    for (let attempt = 0; ; attempt++) {
      if (attempt > 0) await collectGarbage();
      const space = await clusterSpace();
      if (!space) return { allowed: bytes, space: null };
      // Seen on the RAM-backed memstore: its used bytes counted below zero (-42,929), which its OSD
      // reads as far past full ("16 EiB used"), so it drops every write and RGW hangs them.
      if (space.used < 0) {
        last = null;
        return { allowed: 0, space, broken: true };
      }
      last = space;
      lastAt = Date.now();
      handedOut = 0;
      if (room(space) >= minBytes || (attempt > 0 && Date.now() >= end)) break;
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 3000));
    }
  }
  const allowed = Math.min(bytes, room(last!));
  if (allowed < minBytes) return { allowed: 0, space: last };
  handedOut += allowed;
  return { allowed, space: last };
}
