import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { connectPg, createTestDatabase } from '../helpers/database.ts';
import { repo } from '../helpers/service-process.ts';

// Issue 34.5: a start on a database that a newer version migrated (a migration this version does not
// know) refuses with the start-up refusal's message and exit 1, instead of running on tables it does
// not understand; with HTTP_PROCESSES > 1 the supervisor's migration process refuses the same way.

const dataDir = await mkdtemp(join(tmpdir(), 'media-upgrade-'));
t.teardown(() => rm(dataDir, { recursive: true, force: true }));

function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const child = spawn(process.execPath, ['--experimental-async-context-frame', 'src/main.ts'], {
    cwd: repo, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', DATA_DIR: dataDir, PORT: '0', AUTH_SECRET: 'upgrade-test-operator-secret', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
  return new Promise((resolve) => child.on('exit', (code) => {
    clearTimeout(timer);
    resolve({ code, stderr, stdout });
  }));
}

const databaseUrl = await createTestDatabase(t);
const client = await connectPg(databaseUrl);
await client.query(`insert into mikro_orm_migrations (name, executed_at) values ('Migration29991231000000FromTheFuture', now())`);
await client.end();

t.test('one process: refused with a message naming the unknown migration, exit 1', async (t) => {
  const started = await start({ DATABASE_URL: databaseUrl });
  t.equal(started.code, 1);
  t.match(started.stderr, /newer schema than this version of the service knows.*Migration29991231000000FromTheFuture.*Start the newer version again/);
  t.notMatch(started.stderr, /\n\s+at /, 'a message, not a stack trace');
});

t.test('HTTP_PROCESSES=2: the migration process refuses the same way and nothing starts', async (t) => {
  const started = await start({ DATABASE_URL: databaseUrl, HTTP_PROCESSES: '2' });
  t.equal(started.code, 1);
  t.match(started.stderr, /newer schema than this version of the service knows.*Migration29991231000000FromTheFuture/);
  t.notMatch(started.stdout, /"msg":"ready"/);
});

t.test('the database is left as it was: no migration ran, no seed row was written', async (t) => {
  const check = await connectPg(databaseUrl);
  try {
    const plans = await check.query('select count(*)::int as n from plan');
    t.equal(plans.rows[0].n, 0, 'plans are seeded only after the migrations');
  } finally {
    await check.end();
  }
});
