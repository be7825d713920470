import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createTestDatabase } from '../helpers/database.ts';
import { repo } from '../helpers/service-process.ts';

// `npm run --silent cli` while no service runs: the cli starts and stops the embedded PostgreSQL
// itself and must leave nothing but its answer (issue 17.12). Embedded pass only, as it does not
// use TEST_PG_URL.
if (process.env.TEST_PG_KIND === 'server') {
  t.skip('runs in the embedded pass only: this file does not use the second pass\'s database server', () => {});
  process.exit(0);
}

const dataDir = await mkdtemp(join(tmpdir(), 'media-cli-'));
// The embedded PostgreSQL runs as the postgres user, which must be able to enter DATA_DIR.
await chmod(dataDir, 0o755);
t.teardown(() => rm(dataDir, { recursive: true, force: true }));

const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', DATA_DIR: dataDir };
/**
 * After the first test, which is about the embedded PostgreSQL the cli starts and stops itself, the
 * commands run against a database of the test server: the same cli, without a cluster start per call.
 */
const onServer = { DATABASE_URL: await createTestDatabase(t) };

function cli(args: string[], extraEnv: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('npm', ['run', '--silent', 'cli', '--', ...args], { cwd: repo, env: { ...env, ...extraEnv }, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

t.test('team create with no running service: the answer on stdout, nothing on stderr, exit 0', async (t) => {
  const created = await cli(['team', 'create', '--name', 'Alpha']);
  t.equal(created.stderr, '', 'no stack trace or other output on stderr');
  t.equal(created.code, 0);
  const body = JSON.parse(created.stdout);
  t.match(body, { team: { name: 'Alpha' }, apiKey: { key: /^tws_/ } });

  // Again on the now existing cluster, reading what the first run wrote.
  const limits = await cli(['team', 'limits', '--team', body.team.id]);
  t.equal(limits.stderr, '');
  t.equal(limits.code, 0);
  t.match(JSON.parse(limits.stdout), { maxMembers: Number });
  t.notOk(existsSync(join(dataDir, 'postgres', 'postmaster.pid')), 'the cli stopped the PostgreSQL it started');
});

t.test('team plan and team subscription set and read a team\'s plan and subscription', async (t) => {
  const team = JSON.parse((await cli(['team', 'create', '--name', 'Beta'], onServer)).stdout);
  const moved = await cli(['team', 'plan', '--team', team.team.id, '--plan', 'enterprise'], onServer);
  t.equal(moved.code, 0, moved.stderr);
  t.match(JSON.parse(moved.stdout), { plan: { slug: 'enterprise' }, subscription: null });
  const set = await cli(['team', 'subscription', '--team', team.team.id, '--json', JSON.stringify({ plan: 'free', billingCycle: 'YEARLY' })], onServer);
  t.equal(set.code, 0, set.stderr);
  t.match(JSON.parse(set.stdout), { type: 'TEAM', billingCycle: 'YEARLY', teamId: team.team.id });
  const listed = await cli(['team', 'subscription', '--team', team.team.id], onServer);
  t.match(JSON.parse(listed.stdout), [{ type: 'TEAM', billingCycle: 'YEARLY' }]);
});

t.test('team list and key list find a team and its keys again, as JSON, without secrets (a lost team.json)', async (t) => {
  const created = JSON.parse((await cli(['team', 'create', '--name', 'Listed Team'], onServer)).stdout);
  const listed = await cli(['team', 'list', '--search', 'listed', '--page-size', '1'], onServer);
  t.equal(listed.code, 0, listed.stderr);
  t.match(JSON.parse(listed.stdout), { data: [{ id: created.team.id, name: 'Listed Team' }], count: 1 });
  const keys = await cli(['key', 'list', '--team', created.team.id], onServer);
  t.equal(keys.code, 0, keys.stderr);
  t.match(JSON.parse(keys.stdout), [{ id: created.apiKey.id, teamId: created.team.id }]);
  t.notOk(keys.stdout.includes('tws_'), 'no secret');
});

t.test('a refused command prints the error body only, exit 1', async (t) => {
  const refused = await cli(['team', 'limits', '--team', '00000000-0000-4000-8000-000000000000'], onServer);
  t.equal(refused.code, 1);
  t.equal(refused.stdout, '');
  t.match(JSON.parse(refused.stderr), { status: 404, messageKey: 'error.notFound' }, 'stderr is the spec error body and nothing else');
});

t.test('a database that cannot be reached: one line naming the cause, no stack trace, exit 1', async (t) => {
  const failed = await cli(['team', 'create', '--name', 'Gamma'], { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/media' });
  t.equal(failed.code, 1);
  t.equal(failed.stdout, '');
  t.match(failed.stderr, /^Cannot open the database and storage: .*ECONNREFUSED/);
  t.notMatch(failed.stderr, /\n\s+at /, 'no stack trace');
});
