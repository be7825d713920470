import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createTestDatabase } from '../helpers/database.ts';
import { api, spawnService, type RunningService } from '../helpers/service-process.ts';
import { MiB, multipartBody, pngLike, teamStorageState, uploadPath } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';

// Graceful shutdown (issue 6.3, operator contract "Starting"), against the real process and SIGTERM.

const AUTH_SECRET = 'shutdown-test-operator-secret';

interface Running extends RunningService {
  dataDir: string;
  databaseUrl: string;
}

async function startService(t: { teardown(fn: () => unknown): void }, settings: Record<string, string> = {}): Promise<Running> {
  const databaseUrl = await createTestDatabase(t);
  const dataDir = await mkdtemp(join(tmpdir(), 'media-shutdown-'));
  await chmod(dataDir, 0o755);
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const env = {
    PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp',
    DATA_DIR: dataDir, DATABASE_URL: databaseUrl, AUTH_SECRET, PORT: '0', LOG_LEVEL: 'info', ...settings,
  };
  const service = await spawnService(t, { env });
  return { ...service, dataDir, databaseUrl };
}

async function createTeam(port: number): Promise<{ teamId: string; key: string }> {
  const created = await api(port, 'POST', '/v1/admin/teams', { authSecret: AUTH_SECRET }, { name: 'Drain' });
  if (created.status !== 201) throw new Error(`team creation failed: ${JSON.stringify(created.body)}`);
  return { teamId: created.body.team.id, key: created.body.apiKey.key };
}

interface HeldUpload {
  request: ClientRequest;
  response: Promise<{ status: number; headers: Record<string, unknown>; body: any }>;
  finish(): void;
}

/** Sends the headers and the first half of a multipart upload, and holds the rest until finish(). */
function heldUpload(port: number, teamId: string, key: string, content: Buffer): HeldUpload {
  const { body, contentType } = multipartBody([{ content, fileName: 'held.png' }]);
  const request = httpRequest(`http://127.0.0.1:${port}${uploadPath(teamId)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': contentType, 'content-length': String(body.length) },
  });
  const response = new Promise<{ status: number; headers: Record<string, unknown>; body: any }>((resolveResponse, reject) => {
    request.on('response', (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolveResponse({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(text) }));
    });
    request.on('error', reject);
  });
  const half = Math.floor(body.length / 2);
  request.write(body.subarray(0, half));
  return { request, response, finish: () => request.end(body.subarray(half)) };
}

const tempFiles = (dataDir: string) => readdir(join(dataDir, 'files', '.uploads')).catch(() => [] as string[]);

t.test('SIGTERM: healthz 503, new and waiting uploads refused, a running upload finishes, exit 0', async (t) => {
  const service = await startService(t, { UPLOAD_CONCURRENCY: '1', UPLOAD_QUEUE_LIMIT: '1', UPLOAD_TEAM_MAX_SHARE: '1', UPLOAD_RETRY_AFTER_SECONDS: '7' });
  const team = await createTeam(service.port);
  const running = heldUpload(service.port, team.teamId, team.key, pngLike(MiB));
  t.ok(await eventually(async () => (await tempFiles(service.dataDir)).length === 1), 'the held upload is streaming to storage');
  const waiting = heldUpload(service.port, team.teamId, team.key, pngLike(1024));
  waiting.finish(); // complete, but it waits for the only slot
  await new Promise((r) => setTimeout(r, 200));

  service.child.kill('SIGTERM');
  const refusedWaiting = await waiting.response;
  t.equal(refusedWaiting.status, 503, 'the upload waiting for a slot is refused, not left hanging');
  t.equal(refusedWaiting.body.messageKey, 'error.media.uploadBusy');
  t.equal(refusedWaiting.headers['retry-after'], '7');

  t.ok(await eventually(async () => (await api(service.port, 'GET', '/healthz')).status === 503), '/healthz answers 503 while draining');
  const { body, contentType } = multipartBody([{ content: pngLike(1024), fileName: 'new.png' }]);
  const refused = await fetch(`http://127.0.0.1:${service.port}${uploadPath(team.teamId)}`, {
    method: 'POST', headers: { authorization: `Bearer ${team.key}`, 'content-type': contentType }, body,
  });
  t.equal(refused.status, 503, 'a new upload is refused with 503');
  t.ok(Number(refused.headers.get('retry-after')) >= 1, 'with Retry-After');
  t.match(await refused.json(), { name: 'ServiceUnavailableError', status: 503, messageKey: String, message: String }, 'and the spec\'s error body');
  t.equal(service.child.exitCode, null, 'the process waits for the running upload');

  running.finish();
  const landed = await running.response;
  t.equal(landed.status, 201, 'the running upload lands within the grace period');
  t.equal(await service.exited, 0, 'then the process exits 0');
  const state = await teamStorageState(service.databaseUrl, team.teamId);
  t.match(state, { files: 1, reservations: 0, reservedStorage: 0 }, 'one file stored, no reservation left');
  t.equal(state.usedStorage, state.sumOfSizes);
  t.same(await tempFiles(service.dataDir), [], 'no temp file left');
});

t.test('SIGTERM: an upload not finished within SHUTDOWN_GRACE_SECONDS is aborted cleanly, exit 0', async (t) => {
  const service = await startService(t, { SHUTDOWN_GRACE_SECONDS: '1' });
  const team = await createTeam(service.port);
  const before = await teamStorageState(service.databaseUrl, team.teamId);
  // A body past UNRESERVED_DECLARED_BYTES reserves once its file passes UNRESERVED_BYTES: half of it holds a reservation when SIGTERM comes.
  const held = heldUpload(service.port, team.teamId, team.key, pngLike(6 * MiB));
  t.ok(await eventually(async () => (await teamStorageState(service.databaseUrl, team.teamId)).reservations === 1), 'the held upload has a reservation');
  t.equal((await tempFiles(service.dataDir)).length, 1, 'and a temp file');

  const signalled = Date.now();
  service.child.kill('SIGTERM');
  const aborted = await held.response;
  const waited = Date.now() - signalled;
  held.request.destroy();
  t.equal(aborted.status, 503, 'the client hears 503');
  t.match(aborted.body, { name: 'ServiceUnavailableError', status: 503, messageKey: 'error.serviceUnavailable', message: /shutting down/ });
  t.ok(Number(aborted.headers['retry-after']) >= 1, 'with Retry-After');
  t.ok(waited >= 900, `after the grace period (${waited} ms)`);
  t.equal(await service.exited, 0, 'the process exits 0');

  t.same(await teamStorageState(service.databaseUrl, team.teamId), before, 'no row, nothing counted, no reservation');
  t.same(await tempFiles(service.dataDir), [], 'no temp file');
});
