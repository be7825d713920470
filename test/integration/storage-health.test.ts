import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import t from 'tap';
import { Application } from '../../src/app.ts';
import { loadConfig } from '../../src/config/config.ts';
import type { SettingName } from '../../src/config/settings.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { expectError, startTestServer, TEST_AUTH_SECRET } from '../helpers/server.ts';
import { repo } from '../helpers/service-process.ts';
import { closeS3Client, driverSettings, s3, storedObjects } from '../helpers/storage.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { pngLike, teamStorageState, uploadMultipart } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';

// STORAGE_DRIVER=s3 against the real RGW with settings it refuses (start-up stops, naming the
// setting) and behind a proxy that refuses connections (the service starts, /healthz says storage
// is down and recovers once it is back). Issue 17.11.

t.teardown(closeS3Client);

const databaseUrl = await createTestDatabase(t);
const dataDir = await mkdtemp(join(tmpdir(), 'media-storage-health-'));
t.teardown(() => rm(dataDir, { recursive: true, force: true }));

function config(overrides: Partial<Record<SettingName, unknown>>) {
  return loadConfig({
    env: {},
    overrides: { PORT: 0, DATABASE_URL: databaseUrl, DATA_DIR: dataDir, AUTH_SECRET: TEST_AUTH_SECRET, LOG_LEVEL: 'silent', ...driverSettings('s3'), ...overrides },
  });
}

t.test('S3 settings the storage refuses stop start-up with a message naming the setting', async (t) => {
  const cases: [string, Partial<Record<SettingName, unknown>>, RegExp][] = [
    ['a bucket that does not exist', { S3_BUCKET: 'no-such-bucket-17-11' }, /^Invalid configuration: S3_BUCKET: the bucket "no-such-bucket-17-11" does not exist/],
    ['an unknown access key id', { S3_ACCESS_KEY_ID: 'no-such-access-key' }, /^Invalid configuration: S3_ACCESS_KEY_ID: /],
    ['a wrong secret', { S3_SECRET_ACCESS_KEY: 'wrong-secret-0123456789' }, /^Invalid configuration: S3_SECRET_ACCESS_KEY: /],
  ];
  for (const [label, overrides, message] of cases) {
    const app = new Application(config(overrides), pino({ level: 'silent' }));
    await t.rejects(app.start(), { name: 'ConfigError', message }, label);
    t.equal((await fetch(`http://127.0.0.1:${app.port}/healthz`).catch((error: Error) => error)) instanceof Error, true, `${label}: nothing listens any more`);
  }
});

t.test('storage that cannot be reached: the service starts, /healthz is 503 naming storage, uploads 503; it recovers', async (t) => {
  const proxy = await startTcpProxy(Number(new URL(s3.endpoint).port));
  t.teardown(() => proxy.close());
  await proxy.refuse();
  const logged: { msg: string; cause?: string; level: number }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
  const server = await startTestServer(t, {
    databaseUrl,
    logger,
    settings: { ...driverSettings('s3'), S3_ENDPOINT: `http://${proxy.address}`, STORAGE_CHECK_INTERVAL_SECONDS: 1 },
  });

  const health = await server.request('GET', '/healthz');
  expectError(t, health, 503, 'error.serviceUnavailable');
  t.equal(health.body.value, 'storage', 'the JSON names the dependency that is down');
  t.match(health.body.message, /storage \(.*ECONNREFUSED/, 'and why');
  t.ok(health.headers.get('retry-after'), 'with Retry-After');
  t.ok(logged.some((line) => line.msg === 'storage unavailable' && /ECONNREFUSED/.test(line.cause ?? '')), 'the cause is logged');

  const team = await server.createTeam('Unreached');
  const before = await teamStorageState(server.databaseUrl, team.teamId);
  const refused = await uploadMultipart(server, team.teamId, team.key, { content: pngLike(2048), fileName: 'shot.png' });
  expectError(t, refused, 503, 'error.serviceUnavailable');
  t.same(await teamStorageState(server.databaseUrl, team.teamId), before, 'nothing stored or counted');

  await proxy.restore();
  t.ok(await eventually(async () => (await server.request('GET', '/healthz')).status === 200, 15_000), '/healthz recovers once storage answers');
  t.same((await server.request('GET', '/healthz')).body, { status: 'ok', dependencies: { database: 'ok', storage: 'ok' } });
  t.ok(logged.some((line) => line.msg === 'storage available'), 'the recovery is logged');
  const stored = await uploadMultipart(server, team.teamId, team.key, { content: pngLike(2048), fileName: 'shot.png' });
  t.equal(stored.status, 201, 'uploads work again');
  t.ok((await storedObjects('s3', server.dataDir, team.teamId)).objects.length >= 1);

  await proxy.refuse();
  proxy.cut();
  t.ok(await eventually(async () => (await server.request('GET', '/healthz')).status === 503, 15_000), 'storage that goes away later is reported too');
});

t.test('the service process exits 1 with the setting named on stderr', async (t) => {
  const run = (env: Record<string, string>) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, ['src/main.ts'], {
        cwd: repo,
        env: {
          PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', DATA_DIR: dataDir, PORT: '0', DATABASE_URL: databaseUrl,
          AUTH_SECRET: TEST_AUTH_SECRET, LOG_LEVEL: 'silent', STORAGE_DRIVER: 's3', S3_ENDPOINT: s3.endpoint, S3_BUCKET: s3.bucket,
          S3_FORCE_PATH_STYLE: 'true', ...env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      t.teardown(() => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      });
      let stderr = '';
      child.stderr.on('data', (chunk) => (stderr += String(chunk)));
      child.on('exit', (code) => resolve({ code, stderr }));
    });
  const wrongSecret = await run({ S3_ACCESS_KEY_ID: s3.accessKeyId, S3_SECRET_ACCESS_KEY: 'wrong-secret-0123456789' });
  t.equal(wrongSecret.code, 1);
  t.match(wrongSecret.stderr, /^Invalid configuration: S3_SECRET_ACCESS_KEY: /);
  const missingSecret = await run({ S3_ACCESS_KEY_ID: s3.accessKeyId });
  t.equal(missingSecret.code, 1);
  t.match(missingSecret.stderr, /^Invalid configuration: S3_SECRET_ACCESS_KEY must be set when S3_ACCESS_KEY_ID is/);
});
