/**
 * The service under test: its scratch database, its environment, and the team and key it
 * bootstraps through the operator routes (docs/api.md, operator routes).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { startNode, waitHealthy, type Started } from './servers.ts';
import type { S3Settings } from './s3.ts';

export type Driver = 'fs' | 's3';

/** Drops and creates `name` on the server of `serverUrl`; returns the new database's URL. */
export async function resetDatabase(serverUrl: string, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`);
    await admin.query(`create database ${pg.escapeIdentifier(name)}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`);
  } finally {
    await admin.end();
  }
}

export interface ServiceOptions {
  driver: Driver;
  databaseUrl: string;
  dataDir: string;
  s3: S3Settings | null;
  /** Prefix of the service's object keys in the bucket (ends in /). */
  s3KeyPrefix: string;
  authSecret: string;
  /** Settings to add or override (e.g. UPLOAD_CONCURRENCY for a sweep). */
  extra?: Record<string, string>;
  /** Another checkout of the service to start (its own src/ and node_modules); this one by default. */
  checkout?: string;
}

/**
 * The service's settings for a bench run: defaults everywhere (admission gate, worker pool,
 * hashing) except the per-key rate limit, raised so that it never answers 429 here.
 */
export function serviceEnv(options: ServiceOptions): Record<string, string> {
  const env: Record<string, string> = {
    HOST: '127.0.0.1',
    PORT: '0',
    DATA_DIR: options.dataDir,
    DATABASE_URL: options.databaseUrl,
    STORAGE_DRIVER: options.driver,
    AUTH_SECRET: options.authSecret,
    RATE_LIMIT_POINTS: '1000000',
    RATE_LIMIT_DURATION_SECONDS: '1',
    LOG_LEVEL: 'info',
  };
  if (options.driver === 's3' && options.s3) {
    Object.assign(env, {
      S3_ENDPOINT: options.s3.endpoint,
      S3_REGION: options.s3.region,
      S3_BUCKET: options.s3.bucket,
      S3_ACCESS_KEY_ID: options.s3.accessKeyId,
      S3_SECRET_ACCESS_KEY: options.s3.secretAccessKey,
      S3_FORCE_PATH_STYLE: 'true',
      S3_KEY_PREFIX: options.s3KeyPrefix,
    });
  }
  return { ...env, ...settingsFromEnvironment(), ...options.extra };
}

/** `BENCH_SERVICE_<SETTING>=value` in the bench's environment sets <SETTING> for the service (trying other defaults). */
export function settingsFromEnvironment(): Record<string, string> {
  const prefix = 'BENCH_SERVICE_';
  return Object.fromEntries(
    Object.entries(process.env)
      .filter((entry): entry is [string, string] => entry[0].startsWith(prefix) && entry[1] !== undefined)
      .map(([name, value]) => [name.slice(prefix.length), value]),
  );
}

export interface RunningService extends Started {
  teamId: string;
  apiKey: string;
  dataDir: string;
}

async function operator(origin: string, secret: string, method: string, path: string, body: unknown): Promise<any> {
  const response = await fetch(`${origin}${path}`, {
    method,
    headers: { authSecret: secret, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return JSON.parse(text);
}

/**
 * Starts the service (it migrates its database on start), creates a team on the enterprise plan,
 * lifts its storage and file size limits, and returns the team's owner key.
 */
export async function startService(options: ServiceOptions, label = `service-${options.driver}`): Promise<RunningService> {
  await mkdir(options.dataDir, { recursive: true });
  // As `npm start` runs it (package.json): AsyncLocalStorage on AsyncContextFrame (docs/performance.md).
  const started = await startNode(label, ['--experimental-async-context-frame', 'src/main.ts'], serviceEnv(options), { cwd: options.checkout });
  try {
    await waitHealthy(started.origin);
    const created = await operator(started.origin, options.authSecret, 'POST', '/v1/admin/teams', {
      name: `bench-${randomBytes(3).toString('hex')}`,
      plan: 'enterprise',
    });
    const teamId = created.team.id as string;
    await operator(started.origin, options.authSecret, 'PATCH', `/v1/admin/teams/${teamId}/limits`, {
      maxTeamStorage: null,
      maxMediaFileSize: null,
    });
    return { ...started, teamId, apiKey: created.apiKey.key as string, dataDir: options.dataDir };
  } catch (error) {
    await started.stop();
    throw error;
  }
}

/** How the thumbnails left pending by a burst were made after it: how many, and in how long. */
export interface ThumbnailCatchUp {
  pending: number;
  seconds: number | null;
}

/**
 * Waits for the thumbnails of `teamId` still pending in `databaseUrl` (those of the burst that just
 * ended) to be made or marked failed, up to `timeoutMs`; `seconds` null when they were not done by then.
 */
export async function thumbnailCatchUp(databaseUrl: string, teamId: string, timeoutMs = 300_000): Promise<ThumbnailCatchUp> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const pendingNow = async () =>
      Number((await client.query<{ n: string }>(`select count(*) as n from media_file where team_id = $1 and thumbnail_status = 'pending'`, [teamId])).rows[0]!.n);
    const started = performance.now();
    const pending = await pendingNow();
    for (let left = pending; left > 0; left = await pendingNow()) {
      if (performance.now() - started > timeoutMs) return { pending, seconds: null };
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return { pending, seconds: (performance.now() - started) / 1000 };
  } finally {
    await client.end();
  }
}

/** Requests the service's s3 driver has sent so far, by operation (media_s3_requests_total), from /metrics. */
export async function s3RequestsByOperation(origin: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  return new Map([...text.matchAll(/^media_s3_requests_total\{operation="(\w+)"\} (\S+)$/gm)].map((match) => [match[1]!, Number(match[2])]));
}

/** Requests the service's s3 driver has sent so far, every operation. */
export async function s3RequestsSent(origin: string): Promise<number> {
  return [...(await s3RequestsByOperation(origin)).values()].reduce((sum, count) => sum + count, 0);
}
