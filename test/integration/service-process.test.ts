import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { api, repo, spawnService } from '../helpers/service-process.ts';

// The newcomer's path: `npm start` with no database server, on the embedded PostgreSQL.
// It does not depend on TEST_PG_URL, so it runs in the embedded pass only.
if (process.env.TEST_PG_KIND === 'server') {
  t.skip('runs in the embedded pass only: this file does not use the second pass\'s database server', () => {});
  process.exit(0);
}

const dataDir = await mkdtemp(join(tmpdir(), 'media-process-'));
// The embedded PostgreSQL runs as the postgres user, which must be able to enter DATA_DIR.
await chmod(dataDir, 0o755);
t.teardown(() => rm(dataDir, { recursive: true, force: true }));

const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info' };

t.test('npm start on the embedded database: first start, operator route, restart, SIGKILL', async (t) => {
  const first = await spawnService(t, { env });
  const secretLine = first.output.findIndex((line) => line.startsWith('Generated operator secret'));
  t.ok(secretLine >= 0, 'the generated operator secret is printed on first start');
  const secret = first.output[secretLine + 1]!;
  t.equal((await readFile(join(dataDir, 'auth-secret'), 'utf8')).trim(), secret, 'and stored in DATA_DIR');

  t.equal((await api(first.port, 'GET', '/healthz')).status, 200);
  const created = await api(first.port, 'POST', '/v1/admin/teams', { authSecret: secret }, { name: 'Alpha' });
  t.equal(created.status, 201, 'a team is created with the operator secret', { body: created.body });
  const { team, apiKey } = created.body;
  const listed = await api(first.port, 'GET', `/v1/cdn/media/${team.id}`, { authorization: `Bearer ${apiKey.key}` });
  t.same(listed, { status: 200, body: { media: [], totalCount: 0, usedTeamStorage: 0 } }, 'its empty media list');

  const cli = await promisify(execFile)(process.execPath, ['src/cli/main.ts', 'team', 'create', '--name', 'Beta'], { cwd: repo, env });
  t.match(JSON.parse(cli.stdout), { team: { name: 'Beta' }, apiKey: { key: /^tws_/ } }, 'the cli works beside the running service');
  // A key the service has never seen: it must look it up in the database the cli wrote to.
  const beta = JSON.parse(cli.stdout);
  const afterCli = await api(first.port, 'GET', `/v1/cdn/media/${beta.team.id}`, { authorization: `Bearer ${beta.apiKey.key}` });
  t.equal(afterCli.status, 200, 'and shares the running service\'s database without stopping it');

  first.child.kill('SIGTERM');
  t.equal(await first.exited, 0, 'SIGTERM exits 0');

  const second = await spawnService(t, { env });
  t.notOk(second.output.some((line) => line.startsWith('Generated operator secret')), 'the secret is printed only once');
  const again = await api(second.port, 'GET', `/v1/cdn/media/${team.id}`, { authorization: `Bearer ${apiKey.key}` });
  t.equal(again.status, 200, 'data survives a restart');

  second.child.kill('SIGKILL');
  await second.exited;
  const third = await spawnService(t, { env });
  const afterKill = await api(third.port, 'GET', `/v1/cdn/media/${team.id}`, { authorization: `Bearer ${apiKey.key}` });
  t.equal(afterKill.status, 200, 'the service starts again after SIGKILL left PostgreSQL running');
  third.child.kill('SIGTERM');
  t.equal(await third.exited, 0);
});
