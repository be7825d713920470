import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import { createTestDatabase } from './database.ts';
import { api, spawnService, type RunningService } from './service-process.ts';
import { driverSettings, s3, s3Client, type Driver } from './storage.ts';
import { MiB, multipartBody, uploadPath } from './uploads.ts';

// A real service process on its own DATA_DIR and database, for the tests that SIGKILL it mid-upload.

export const AUTH_SECRET = 'crash-sweep-test-operator-secret';

export interface Instance {
  databaseUrl: string;
  dataDir: string;
  env: Record<string, string>;
}

export async function prepareInstance(t: { teardown(fn: () => unknown): void }, driver: Driver, keyPrefix: string): Promise<Instance> {
  const databaseUrl = await createTestDatabase(t);
  const dataDir = await mkdtemp(join(tmpdir(), 'media-crash-'));
  await chmod(dataDir, 0o755);
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp',
    DATA_DIR: dataDir, DATABASE_URL: databaseUrl, AUTH_SECRET, PORT: '0', LOG_LEVEL: 'info',
    // Small for the test: what the killed instance left is stale a second later.
    CRASH_SWEEP_MIN_AGE_SECONDS: '1',
  };
  for (const [name, value] of Object.entries(driverSettings(driver))) env[name] = String(value);
  // A prefix of its own, so this test's sweeps never touch the multipart uploads of tests running alongside.
  if (driver === 's3') env.S3_KEY_PREFIX = keyPrefix;
  return { databaseUrl, dataDir, env };
}

export function startService(t: { teardown(fn: () => unknown): void }, instance: Instance): Promise<RunningService> {
  return spawnService(t, { env: instance.env });
}

export async function createTeam(port: number, name: string): Promise<{ teamId: string; key: string }> {
  const created = await api(port, 'POST', '/v1/admin/teams', { authSecret: AUTH_SECRET }, { name });
  if (created.status !== 201) throw new Error(`team creation failed: ${JSON.stringify(created.body)}`);
  const teamId: string = created.body.team.id;
  const limits = await api(port, 'PATCH', `/v1/admin/teams/${teamId}/limits`, { authSecret: AUTH_SECRET }, { maxMediaFileSize: 100 * MiB, maxTeamStorage: 1024 * 1024 });
  if (limits.status !== 200) throw new Error(`limits update failed: ${JSON.stringify(limits.body)}`);
  return { teamId, key: created.body.apiKey.key };
}

export async function upload(port: number, teamId: string, key: string, content: Buffer): Promise<number> {
  const { body, contentType } = multipartBody([{ content, fileName: 'small.png' }]);
  const response = await fetch(`http://127.0.0.1:${port}${uploadPath(teamId)}`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': contentType }, body,
  });
  await response.arrayBuffer();
  return response.status;
}

/** Sends the headers and the first half of a multipart upload and never the rest. */
/** `path`: the multipart upload route to hold (the media one unless told, e.g. a team file's). */
export function heldUpload(port: number, teamId: string, key: string, content: Buffer, path = uploadPath(teamId)): ClientRequest {
  const { body, contentType } = multipartBody([{ content, fileName: 'held.png' }]);
  const request = httpRequest(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': contentType, 'content-length': String(body.length) },
  });
  request.on('error', () => undefined); // the server dies under it
  request.write(body.subarray(0, Math.floor(body.length / 2)));
  return request;
}

/** Temp files (fs) or multipart uploads under the instance's prefix (s3). */
export async function inProgress(driver: Driver, instance: Instance, keyPrefix: string): Promise<string[]> {
  if (driver === 'fs') return readdir(join(instance.dataDir, 'files', '.uploads')).catch(() => [] as string[]);
  const listed = await s3Client().send(new ListMultipartUploadsCommand({ Bucket: s3.bucket, Prefix: keyPrefix }));
  return (listed.Uploads ?? []).map((upload) => upload.Key!);
}
