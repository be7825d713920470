import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { ConfigError, loadConfig } from '../../src/config/config.ts';
import type { Config, LoadConfigOptions } from '../../src/config/config.ts';
import type { Test } from 'tap';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const cwd = path.join(tmpdir(), 'config-test-cwd');

let tmp = '';
t.before(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), 'config-test-'));
});
t.teardown(() => rm(tmp, { recursive: true, force: true }));

/** loadConfig with only the given environment (never the test process's own). */
function load(env: Record<string, string> = {}, overrides?: LoadConfigOptions['overrides']): Config {
  return loadConfig({ env, cwd, ...(overrides ? { overrides } : {}) });
}

/** Writes a configuration file into the temp directory and returns its path. */
async function configFile(name: string, content: string): Promise<string> {
  const file = path.join(tmp, name);
  await writeFile(file, content);
  return file;
}

function configError(t: Test, fn: () => unknown, ...patterns: (string | RegExp)[]): void {
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  t.type(thrown, ConfigError, 'throws ConfigError');
  t.equal((thrown as Error | undefined)?.name, 'ConfigError');
  const message = (thrown as Error | undefined)?.message ?? '';
  for (const pattern of patterns) {
    if (typeof pattern === 'string') t.ok(message.includes(pattern), `message ${JSON.stringify(message)} includes ${JSON.stringify(pattern)}`);
    else t.match(message, pattern);
  }
}

t.test('defaults come from config/default.json', (t) => {
  const config = load();
  t.equal(config.port, 3000);
  t.equal(config.host, '127.0.0.1');
  t.equal(config.publicUrl, 'http://127.0.0.1:3000');
  t.equal(config.dataDir, path.resolve(cwd, 'data'), 'DATA_DIR resolved against cwd');
  t.equal(config.databaseUrl, null);
  t.equal(config.databasePoolSize, 10);
  t.equal(config.storage.driver, 'fs');
  t.equal(config.accounts.passwordHashCost, 17, "PASSWORD_HASH_COST: OWASP's scrypt N=2^17");
  t.same(config.storage.s3, {
    endpoint: null,
    region: 'us-east-1',
    bucket: 'media',
    accessKeyId: null,
    secretAccessKey: null,
    forcePathStyle: false,
    keyPrefix: '',
    partSize: 5 * 1024 * 1024,
    queueSize: 1,
  });
  t.equal(config.cdnUrl, null);
  t.equal(config.cdnPurgeUrl, null);
  t.equal(config.redisUrl, null);
  t.equal(config.authSecret, null);
  t.equal(config.instanceId, null, 'no INSTANCE_ID: an id generated once and stored in DATA_DIR');
  t.same(config.upload, { concurrency: 32, queueLimit: 64, teamMaxShare: 0.8, retryAfterSeconds: 5, hashOffloadMinBytes: null, databaseFileMaxBytes: 65_536, idleTimeoutSeconds: 8 });
  t.equal(config.shutdownGraceSeconds, 25, 'below the 30 s a container orchestrator waits before SIGKILL');
  t.equal(config.crashSweepMinAgeSeconds, 600, 'the crash sweeper leaves anything touched in the last 10 minutes');
  t.same(config.rateLimit, { points: 32, durationSeconds: 10 });
  t.same(config.authFailureLimit, { points: 30, durationSeconds: 60 }, '30 failed authentications per address per minute, then 429');
  t.equal(config.workerThreads, availableParallelism(), 'WORKER_THREADS defaults to the number of cores');
  t.equal(config.maxJsonBodyBytes, 1048576);
  t.equal(config.apiKeyCacheSeconds, 30);
  t.equal(config.metricsToken, null, 'no METRICS_TOKEN: /metrics answers loopback clients only');
  t.equal(config.logLevel, 'info');
  t.end();
});

t.test('publicUrl is derived from host and port unless PUBLIC_URL is set', (t) => {
  t.equal(load({ HOST: '0.0.0.0', PORT: '8080' }).publicUrl, 'http://0.0.0.0:8080');
  t.equal(load({ HOST: '::1', PORT: '8080' }).publicUrl, 'http://[::1]:8080', 'an IPv6 host is bracketed');
  t.equal(load({ HOST: 'media.local' }).publicUrl, 'http://media.local:3000');
  t.equal(load({ PUBLIC_URL: 'https://media.example.com', PORT: '8080' }).publicUrl, 'https://media.example.com');
  t.end();
});

t.test('an absolute DATA_DIR is kept; a relative one is resolved against cwd', (t) => {
  t.equal(load({ DATA_DIR: '/var/lib/media' }).dataDir, '/var/lib/media');
  t.equal(load({ DATA_DIR: 'store/files' }).dataDir, path.join(cwd, 'store/files'));
  t.equal(load({ INSTANCE_ID: 'game-eu-1.a_b' }).instanceId, 'game-eu-1.a_b');
  t.end();
});

t.test('environment variables override defaults', async (t) => {
  t.test('integers', (t) => {
    const config = load({
      PORT: '8080',
      DATABASE_POOL_SIZE: '20',
      UPLOAD_CONCURRENCY: '4',
      UPLOAD_QUEUE_LIMIT: '0',
      UPLOAD_TEAM_MAX_SHARE: '0.25',
      UPLOAD_RETRY_AFTER_SECONDS: '30',
      UPLOAD_IDLE_TIMEOUT_SECONDS: '7',
      DATABASE_FILE_MAX_BYTES: '0',
      SHUTDOWN_GRACE_SECONDS: '0',
      CRASH_SWEEP_MIN_AGE_SECONDS: '2',
      RATE_LIMIT_POINTS: '100',
      RATE_LIMIT_DURATION_SECONDS: '60',
      AUTH_FAILURE_LIMIT_POINTS: '5',
      AUTH_FAILURE_LIMIT_DURATION_SECONDS: '300',
      WORKER_THREADS: '3',
      MAX_JSON_BODY_BYTES: '2048',
      API_KEY_CACHE_SECONDS: '0',
    });
    t.equal(config.port, 8080);
    t.equal(config.databasePoolSize, 20);
    t.same(config.upload, { concurrency: 4, queueLimit: 0, teamMaxShare: 0.25, retryAfterSeconds: 30, hashOffloadMinBytes: null, databaseFileMaxBytes: 0, idleTimeoutSeconds: 7 });
    t.throws(() => load({ DATABASE_FILE_MAX_BYTES: '2000000' }), /DATABASE_FILE_MAX_BYTES/, 'more than 1 MiB is refused');
    t.equal(load({ UPLOAD_TEAM_MAX_SHARE: '1' }).upload.teamMaxShare, 1, 'a share of 1 turns the team cap off');
    t.equal(load({ UPLOAD_TEAM_MAX_SHARE: '.5' }).upload.teamMaxShare, 0.5);
    t.equal(config.shutdownGraceSeconds, 0, 'SHUTDOWN_GRACE_SECONDS 0 aborts in-flight uploads at once');
    t.equal(config.crashSweepMinAgeSeconds, 2);
    t.same(config.rateLimit, { points: 100, durationSeconds: 60 });
    t.same(config.authFailureLimit, { points: 5, durationSeconds: 300 });
    t.equal(config.workerThreads, 3);
    t.equal(config.maxJsonBodyBytes, 2048);
    t.equal(config.apiKeyCacheSeconds, 0);
    t.equal(load({ PORT: '0' }).port, 0, 'port 0 (any free port) is allowed');
    t.equal(load({ PORT: '65535' }).port, 65535);
    t.end();
  });

  t.test('booleans', (t) => {
    t.equal(load({ S3_FORCE_PATH_STYLE: 'true' }).storage.s3.forcePathStyle, true);
    t.equal(load({ S3_FORCE_PATH_STYLE: '1' }).storage.s3.forcePathStyle, true);
    t.equal(load({ S3_FORCE_PATH_STYLE: 'false' }).storage.s3.forcePathStyle, false);
    t.equal(load({ S3_FORCE_PATH_STYLE: '0' }).storage.s3.forcePathStyle, false);
    configError(t, () => load({ S3_FORCE_PATH_STYLE: 'yes' }), 'S3_FORCE_PATH_STYLE', 'true or false');
    t.end();
  });

  t.test('enums', (t) => {
    t.equal(load({ STORAGE_DRIVER: 's3' }).storage.driver, 's3');
    t.equal(load({ LOG_LEVEL: 'debug' }).logLevel, 'debug');
    t.equal(load({ LOG_LEVEL: 'silent' }).logLevel, 'silent');
    t.end();
  });

  t.test('URLs and strings', (t) => {
    const config = load({
      DATABASE_URL: 'postgres://user:pw@db.example:5432/media',
      REDIS_URL: 'rediss://cache.example:6380',
      S3_ENDPOINT: 'http://minio:9000',
      S3_REGION: 'eu-central-1',
      S3_BUCKET: 'team-media.prod',
      S3_ACCESS_KEY_ID: 'AKIA123',
      S3_SECRET_ACCESS_KEY: 'secret',
      CDN_URL: 'https://cdn.example.com/media',
      CDN_PURGE_URL: 'https://cdn-api.example.com/purge',
      AUTH_SECRET: 'a-secret-of-sixteen+',
      METRICS_TOKEN: 'metrics-token-0123456789',
    });
    t.equal(config.databaseUrl, 'postgres://user:pw@db.example:5432/media');
    t.equal(config.redisUrl, 'rediss://cache.example:6380');
    t.equal(config.storage.s3.endpoint, 'http://minio:9000');
    t.equal(config.storage.s3.region, 'eu-central-1');
    t.equal(config.storage.s3.bucket, 'team-media.prod');
    t.equal(config.storage.s3.accessKeyId, 'AKIA123');
    t.equal(config.storage.s3.secretAccessKey, 'secret');
    t.equal(config.cdnUrl, 'https://cdn.example.com/media');
    t.equal(config.cdnPurgeUrl, 'https://cdn-api.example.com/purge');
    t.equal(config.authSecret, 'a-secret-of-sixteen+');
    t.equal(config.metricsToken, 'metrics-token-0123456789');
    t.equal(load({ DATABASE_URL: 'postgresql://localhost/db' }).databaseUrl, 'postgresql://localhost/db');
    t.end();
  });
});

t.test('an empty environment variable counts as unset', (t) => {
  const config = load({ PORT: '', DATABASE_URL: '', STORAGE_DRIVER: '', CDN_URL: '', WORKER_THREADS: '', CONFIG_FILE: '' });
  t.equal(config.port, 3000);
  t.equal(config.databaseUrl, null);
  t.equal(config.storage.driver, 'fs');
  t.equal(config.cdnUrl, null);
  t.equal(config.workerThreads, availableParallelism());
  t.end();
});

t.test('variables that are not settings are ignored', (t) => {
  t.doesNotThrow(() => load({ SOMETHING_ELSE: 'x', PATH: '/bin' }));
  t.end();
});

t.test('overrides apply after the environment', (t) => {
  const config = load({ PORT: '8080', LOG_LEVEL: 'debug' }, { PORT: 9090 });
  t.equal(config.port, 9090);
  t.equal(config.logLevel, 'debug');
  configError(t, () => load({}, { PORT: 'abc' }), 'PORT', 'an integer from 0 to 65535');
  t.end();
});

t.test('CONFIG_FILE layering: defaults < file < environment', async (t) => {
  const file = await configFile(
    'layered.json',
    JSON.stringify({ PORT: 4000, LOG_LEVEL: 'warn', STORAGE_DRIVER: 's3', S3_FORCE_PATH_STYLE: true, DATA_DIR: '/srv/media' }),
  );
  const fromFile = load({ CONFIG_FILE: file });
  t.equal(fromFile.port, 4000, 'file overrides default');
  t.equal(fromFile.logLevel, 'warn');
  t.equal(fromFile.storage.driver, 's3');
  t.equal(fromFile.storage.s3.forcePathStyle, true);
  t.equal(fromFile.dataDir, '/srv/media');
  t.equal(fromFile.host, '127.0.0.1', 'settings the file leaves out keep their defaults');
  t.equal(fromFile.publicUrl, 'http://127.0.0.1:4000');

  const withEnv = load({ CONFIG_FILE: file, PORT: '5000', S3_FORCE_PATH_STYLE: '0' });
  t.equal(withEnv.port, 5000, 'environment overrides file');
  t.equal(withEnv.storage.s3.forcePathStyle, false);
  t.equal(withEnv.logLevel, 'warn', 'file value stays where the environment is silent');

  const emptyEnv = load({ CONFIG_FILE: file, PORT: '' });
  t.equal(emptyEnv.port, 4000, 'an empty variable does not override the file');
});

t.test('CONFIG_FILE may be relative to cwd and may hold null or string values', async (t) => {
  await configFile('relative.json', JSON.stringify({ PORT: '4100', WORKER_THREADS: null, CDN_URL: 'https://cdn.example.com/' }));
  const config = loadConfig({ env: { CONFIG_FILE: 'relative.json' }, cwd: tmp });
  t.equal(config.port, 4100);
  t.equal(config.workerThreads, availableParallelism());
  t.equal(config.cdnUrl, 'https://cdn.example.com');
  t.equal(config.dataDir, path.join(tmp, 'data'));
});

t.test('DEFAULT_PLAN: free unless set; whether the plan exists is checked at start-up, once the database is up', (t) => {
  t.equal(load().defaultPlan, 'free');
  t.equal(load({ DEFAULT_PLAN: 'enterprise' }).defaultPlan, 'enterprise');
  t.equal(load({ DEFAULT_PLAN: 'gold' }).defaultPlan, 'gold', 'a well-formed slug passes here (test/integration/admin-routes.test.ts: start-up refuses it)');
  t.end();
});

t.test('an empty JSON object as CONFIG_FILE changes nothing', async (t) => {
  const file = await configFile('empty.json', '{}');
  t.same(load({ CONFIG_FILE: file }), load());
});

t.test('invalid values throw ConfigError naming the setting and the expected form', (t) => {
  const cases: [Record<string, string>, string, string][] = [
    [{ PORT: 'abc' }, 'PORT', 'an integer from 0 to 65535'],
    [{ PORT: '70000' }, 'PORT', 'an integer from 0 to 65535'],
    [{ PORT: '-1' }, 'PORT', 'an integer from 0 to 65535'],
    [{ PORT: '80.5' }, 'PORT', 'an integer from 0 to 65535'],
    [{ PORT: ' 80' }, 'PORT', 'an integer from 0 to 65535'],
    [{ STORAGE_DRIVER: 'ftp' }, 'STORAGE_DRIVER', '"fs" or "s3"'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL', 'a postgres:// connection URL'],
    [{ CDN_URL: 'notaurl' }, 'CDN_URL', 'an http(s) URL'],
    [{ CDN_URL: 'ftp://cdn.example.com' }, 'CDN_URL', 'an http(s) URL'],
    [{ CDN_PURGE_URL: 'notaurl' }, 'CDN_PURGE_URL', 'an http(s) URL'],
    [{ PUBLIC_URL: 'notaurl' }, 'PUBLIC_URL', 'an http(s) URL'],
    [{ REDIS_URL: 'http://cache' }, 'REDIS_URL', 'a redis:// URL'],
    [{ UPLOAD_CONCURRENCY: '0' }, 'UPLOAD_CONCURRENCY', 'an integer from 1 to 10000'],
    [{ UPLOAD_TEAM_MAX_SHARE: '0' }, 'UPLOAD_TEAM_MAX_SHARE', 'a number above 0 and at most 1'],
    [{ UPLOAD_TEAM_MAX_SHARE: '1.5' }, 'UPLOAD_TEAM_MAX_SHARE', 'a number above 0 and at most 1'],
    [{ UPLOAD_TEAM_MAX_SHARE: 'half' }, 'UPLOAD_TEAM_MAX_SHARE', 'a number above 0 and at most 1'],
    [{ AUTH_FAILURE_LIMIT_POINTS: '0' }, 'AUTH_FAILURE_LIMIT_POINTS', 'an integer from 1 to 1000000'],
    [{ AUTH_FAILURE_LIMIT_DURATION_SECONDS: '0' }, 'AUTH_FAILURE_LIMIT_DURATION_SECONDS', 'an integer from 1 to 86400'],
    [{ INSTANCE_ID: 'has space' }, 'INSTANCE_ID', '1 to 64 characters of A-Z a-z 0-9 _ . -'],
    [{ INSTANCE_ID: 'x'.repeat(65) }, 'INSTANCE_ID', '1 to 64 characters of A-Z a-z 0-9 _ . -'],
    [{ WORKER_THREADS: '0' }, 'WORKER_THREADS', 'an integer from 1 to 256'],
    [{ CRASH_SWEEP_MIN_AGE_SECONDS: '0' }, 'CRASH_SWEEP_MIN_AGE_SECONDS', 'an integer from 1 to 604800'],
    [{ MAX_JSON_BODY_BYTES: '100' }, 'MAX_JSON_BODY_BYTES', 'an integer from 1024 to 67108864'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL', 'one of fatal, error, warn, info, debug, trace, silent'],
    [{ AUTH_SECRET: 'short' }, 'AUTH_SECRET', 'a string of at least 16 characters'],
    [{ METRICS_TOKEN: 'short' }, 'METRICS_TOKEN', 'at least 16 printable ASCII characters without spaces'],
    [{ METRICS_TOKEN: 'has a space in it, long enough' }, 'METRICS_TOKEN', 'at least 16 printable ASCII characters without spaces'],
    [{ S3_BUCKET: 'Bad_Bucket' }, 'S3_BUCKET', 'an S3 bucket name'],
    [{ DEFAULT_PLAN: 'gold plan' }, 'DEFAULT_PLAN', 'a plan slug (1 to 32 characters of a-z A-Z 0-9 _ . -) such as free or enterprise'],
    [{ DEFAULT_PLAN: 'x'.repeat(33) }, 'DEFAULT_PLAN', 'a plan slug'],
    [{ PASSWORD_HASH_COST: '9' }, 'PASSWORD_HASH_COST', 'an integer from 10 to 18'],
    [{ PASSWORD_HASH_COST: '19' }, 'PASSWORD_HASH_COST', 'an integer from 10 to 18'],
  ];
  for (const [env, name, expected] of cases) {
    t.test(JSON.stringify(env), (t) => {
      const value = Object.values(env)[0]!;
      const secret = ['AUTH_SECRET', 'S3_SECRET_ACCESS_KEY', 'DATABASE_URL', 'REDIS_URL', 'METRICS_TOKEN'].includes(name);
      configError(t, () => load(env), `${name} must be ${expected}`, secret ? '(got a value that is not shown)' : `(got ${JSON.stringify(value)})`);
      t.end();
    });
  }
  t.end();
});

t.test('S3 credentials come as a pair: one without the other names the missing setting (issue 17.11)', (t) => {
  configError(t, () => load({ STORAGE_DRIVER: 's3', S3_ACCESS_KEY_ID: 'key' }), 'S3_SECRET_ACCESS_KEY must be set when S3_ACCESS_KEY_ID is');
  configError(t, () => load({ STORAGE_DRIVER: 's3', S3_SECRET_ACCESS_KEY: 'secret' }), 'S3_ACCESS_KEY_ID must be set when S3_SECRET_ACCESS_KEY is');
  t.equal(load({ STORAGE_DRIVER: 's3' }).storage.s3.accessKeyId, null, 'neither: the AWS default credential chain');
  t.equal(load({ STORAGE_DRIVER: 's3', S3_ACCESS_KEY_ID: 'key', S3_SECRET_ACCESS_KEY: 'secret' }).storage.s3.secretAccessKey, 'secret');
  t.equal(load({ S3_ACCESS_KEY_ID: 'key' }).storage.driver, 'fs', 'ignored with the fs driver');
  t.equal(load().storage.checkIntervalSeconds, 15, 'STORAGE_CHECK_INTERVAL_SECONDS defaults to 15');
  t.equal(load({ STORAGE_CHECK_INTERVAL_SECONDS: '2' }).storage.checkIntervalSeconds, 2);
  configError(t, () => load({ STORAGE_CHECK_INTERVAL_SECONDS: '0' }), 'STORAGE_CHECK_INTERVAL_SECONDS');
  t.end();
});

t.test('OAuth providers: offered only with id and secret, which come as a pair; http only as set', (t) => {
  const none = load().oauth;
  t.same(none, { discord: null, google: null }, 'none by default');
  const both = load({
    OAUTH_DISCORD_CLIENT_ID: 'd-id', OAUTH_DISCORD_CLIENT_SECRET: 'd-secret', OAUTH_GOOGLE_CLIENT_ID: 'g-id', OAUTH_GOOGLE_CLIENT_SECRET: 'g-secret',
  }).oauth;
  t.same(both.discord, { clientId: 'd-id', clientSecret: 'd-secret', apiUrl: 'https://discord.com/api', authorizeUrl: 'https://discord.com/oauth2/authorize', guildId: null });
  t.equal(load({ OAUTH_DISCORD_CLIENT_ID: 'd-id', OAUTH_DISCORD_CLIENT_SECRET: 'd-secret', OAUTH_DISCORD_GUILD_ID: '613425648685547541' }).oauth.discord?.guildId, '613425648685547541');
  configError(t, () => load({ OAUTH_DISCORD_GUILD_ID: 'my-guild' }), 'OAUTH_DISCORD_GUILD_ID');
  t.same(both.google, { clientId: 'g-id', clientSecret: 'g-secret', issuer: 'https://accounts.google.com' });
  configError(t, () => load({ OAUTH_DISCORD_CLIENT_ID: 'd-id' }), 'OAUTH_DISCORD_CLIENT_ID and OAUTH_DISCORD_CLIENT_SECRET must be set together');
  configError(t, () => load({ OAUTH_GOOGLE_CLIENT_SECRET: 'g-secret' }), 'OAUTH_GOOGLE_CLIENT_ID and OAUTH_GOOGLE_CLIENT_SECRET must be set together');
  configError(t, () => load({ OAUTH_GOOGLE_ISSUER: 'ftp://issuer.example' }), 'OAUTH_GOOGLE_ISSUER');
  t.end();
});

t.test('notification deliveries: MAIL_PROVIDER and NOTIFICATION_RETENTION_DAYS', (t) => {
  t.equal(load().mail.provider, 'SES');
  t.equal(load().notificationRetentionDays, 90);
  t.equal(load({ MAIL_PROVIDER: 'BREVO', NOTIFICATION_RETENTION_DAYS: '7' }).mail.provider, 'BREVO');
  configError(t, () => load({ MAIL_PROVIDER: 'SMTP' }), 'MAIL_PROVIDER');
  configError(t, () => load({ NOTIFICATION_RETENTION_DAYS: '0' }), 'NOTIFICATION_RETENTION_DAYS');
  t.end();
});

t.test('an invalid secret is not echoed in the error message', (t) => {
  configError(t, () => load({ AUTH_SECRET: 'hunter2-secret' }), 'AUTH_SECRET');
  configError(t, () => load({ DATABASE_URL: 'mysql://admin:s3cr3t-pw@db/x' }), 'DATABASE_URL');
  let message = '';
  try {
    load({ AUTH_SECRET: 'hunter2-secret' });
  } catch (error) {
    message = (error as Error).message;
  }
  t.notMatch(message, 'hunter2-secret');
  try {
    load({ DATABASE_URL: 'mysql://admin:s3cr3t-pw@db/x' });
  } catch (error) {
    message = (error as Error).message;
  }
  t.notMatch(message, 's3cr3t-pw');
  t.end();
});

t.test('invalid values in CONFIG_FILE throw ConfigError too', async (t) => {
  const file = await configFile('bad-value.json', JSON.stringify({ PORT: 3.5 }));
  configError(t, () => load({ CONFIG_FILE: file }), 'PORT must be an integer from 0 to 65535', '(got 3.5)');
  const wrongType = await configFile('bad-type.json', JSON.stringify({ S3_FORCE_PATH_STYLE: 'yes' }));
  configError(t, () => load({ CONFIG_FILE: wrongType }), 'S3_FORCE_PATH_STYLE must be true or false');
  const envFixes = load({ CONFIG_FILE: file, PORT: '3001' });
  t.equal(envFixes.port, 3001, 'an environment value replaces an invalid file value before validation');
});

t.test('a bad CONFIG_FILE throws ConfigError naming the problem', async (t) => {
  t.test('missing', (t) => {
    const missing = path.join(tmp, 'does-not-exist.json');
    configError(t, () => load({ CONFIG_FILE: missing }), 'Cannot read configuration file', missing);
    t.end();
  });
  t.test('not JSON', async (t) => {
    const file = await configFile('not-json.json', '{ PORT: 3000 ');
    configError(t, () => load({ CONFIG_FILE: file }), 'is not valid JSON', file);
  });
  t.test('not an object', async (t) => {
    for (const [name, content] of [['array.json', '[1, 2]'], ['null.json', 'null'], ['number.json', '42'], ['string.json', '"PORT"']] as const) {
      const file = await configFile(name, content);
      configError(t, () => load({ CONFIG_FILE: file }), 'must hold a JSON object of settings', file);
    }
  });
  t.test('unknown key', async (t) => {
    const file = await configFile('unknown.json', JSON.stringify({ PORT: 3000, PROT: 3001 }));
    configError(t, () => load({ CONFIG_FILE: file }), 'unknown setting PROT', file, 'known settings: HOST, PORT');
  });
  t.test('keys that name Object.prototype members are unknown settings too', async (t) => {
    for (const key of ['toString', 'constructor', 'hasOwnProperty']) {
      const file = await configFile(`proto-${key}.json`, `{"${key}": 1}`);
      configError(t, () => load({ CONFIG_FILE: file }), `unknown setting ${key}`);
    }
  });
});

t.test('trailing slashes are removed from CDN_URL and PUBLIC_URL', (t) => {
  t.equal(load({ CDN_URL: 'https://cdn.example.com/' }).cdnUrl, 'https://cdn.example.com');
  t.equal(load({ CDN_URL: 'https://cdn.example.com/media//' }).cdnUrl, 'https://cdn.example.com/media');
  t.equal(load({ PUBLIC_URL: 'https://media.example.com/' }).publicUrl, 'https://media.example.com');
  t.equal(load({ PUBLIC_URL: 'https://media.example.com/api///' }).publicUrl, 'https://media.example.com/api');
  t.end();
});

t.test('the service process exits with code 1 on an invalid setting, before starting anything', async (t) => {
  const dataDir = path.join(tmp, 'process-data-dir');
  const child = spawn(process.execPath, ['src/main.ts'], {
    cwd: repo,
    env: { ...process.env, PORT: 'abc', DATABASE_URL: '', CONFIG_FILE: '', DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (data: string) => (stdout += data));
  child.stderr.setEncoding('utf8').on('data', (data: string) => (stderr += data));
  // A generous guard, not a timing assertion: a process stuck in start-up must not hang the suite.
  const guard = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => {
    child.once('exit', (code, signal) => resolve([code, signal]));
  });
  clearTimeout(guard);
  t.equal(signal, null, 'exited on its own');
  t.equal(code, 1);
  t.match(stderr, 'PORT');
  t.match(stderr, 'an integer from 0 to 65535');
  t.equal(stdout, '', 'no log output: the logger was never created');
  t.notOk(existsSync(dataDir), 'DATA_DIR was never created: no embedded database, no generated secret');
});

t.test('CORS_ORIGINS: * by default, a list of origins, or empty for off (also as an empty variable)', async (t) => {
  t.equal(load().corsOrigins, '*');
  t.same(load({ CORS_ORIGINS: 'https://cfx-nui-screenshot-basic, http://localhost:5173/ ,HTTPS://Panel.Example.com' }).corsOrigins,
    ['https://cfx-nui-screenshot-basic', 'http://localhost:5173', 'https://panel.example.com'], 'trimmed, lower case, no trailing slash');
  t.same(load({ CORS_ORIGINS: '' }).corsOrigins, [], 'an empty variable turns CORS off, unlike other settings');
  const file = await configFile('cors-off.json', '{"CORS_ORIGINS": ""}');
  t.same(load({ CONFIG_FILE: file }).corsOrigins, [], 'so does an empty value in a file');
  for (const bad of ['https://x.example/path', 'not an origin', '*, https://x.example', 'https://x.example?q=1']) {
    configError(t, () => load({ CORS_ORIGINS: bad }), 'CORS_ORIGINS', 'comma-separated list of origins');
  }
});

t.test('ACCESS_LOG: on by default, false turns it off', (t) => {
  t.equal(load().accessLog, true);
  t.equal(load({ ACCESS_LOG: 'false' }).accessLog, false);
  configError(t, () => load({ ACCESS_LOG: 'maybe' }), 'ACCESS_LOG', 'true or false');
  t.end();
});
