import { execFile, spawn } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import t from 'tap';
import { api, repo } from '../helpers/service-process.ts';
import { eventually, sleep } from '../helpers/wait.ts';
import { multipartBody, pngLike } from '../helpers/uploads.ts';

// The newcomer's first ten minutes: a fresh clone, the machine's own node (whatever version),
// `npm install`, `npm start`, the cli, an upload; and npm scripts on the Node 22 the project brings.
// Slow (npm install); it clones the committed tree, so it tests what a newcomer gets, not the work tree.
if (process.env.TEST_PG_KIND === 'server') {
  t.skip('runs in the embedded pass only: this file does not use the second pass\'s database server', () => {});
  process.exit(0);
}
t.setTimeout(15 * 60_000);

const run = promisify(execFile);
const work = await mkdtemp(join(tmpdir(), 'media-newcomer-'));
// The embedded PostgreSQL runs as the postgres user, which must be able to enter DATA_DIR.
await chmod(work, 0o755);
t.teardown(() => rm(work, { recursive: true, force: true, maxRetries: 10, retryDelay: 300 }));
const clone = join(work, 'clone');
const dataDir = join(work, 'data');

// The machine's own node and npm first: not this project's node_modules/.bin, which `npm test` put first.
const machinePath = (process.env.PATH ?? '').split(':').filter((dir) => dir !== '' && !dir.includes('node_modules')).join(':');
// Nothing of the npm run this test runs under (npm_config_*, npm_lifecycle_*): a newcomer's shell has none of it.
const env: Record<string, string> = { PATH: machinePath, HOME: process.env.HOME ?? '/tmp', LANG: 'C.UTF-8' };

t.test('fresh clone, machine node, npm install, npm start, cli, upload; npm scripts on Node 22', async (t) => {
  const machineNode = (await run('node', ['-v'], { env })).stdout.trim();
  const machineNodePath = (await run('sh', ['-c', 'command -v node'], { env })).stdout.trim();
  t.notMatch(machineNodePath, /node_modules/, `the machine's node (${machineNodePath}, ${machineNode}) is first on PATH`);
  t.comment(`machine node: ${machineNodePath} ${machineNode}`);

  await run('git', ['clone', '--quiet', repo, clone], { env });
  const install = await run('npm', ['install', '--no-audit', '--no-fund'], { cwd: clone, env, maxBuffer: 64 * 1024 * 1024, timeout: 10 * 60_000 });
  t.pass('npm install succeeds');
  // On a Node 20 machine npm warns EBADENGINE for the dependencies that need Node 22 (MikroORM): harmless, the
  // scripts run on the project's Node 22. Errors are another matter.
  t.notMatch(install.stderr, /npm error/, 'without errors', { stderr: install.stderr });

  // `npm test`'s entry: npm runs its script with `<script-shell> -c "<script>"`, so a probe shell shows the
  // node that script gets, without running the suite.
  const probe = join(work, 'probe-shell.sh');
  await writeFile(probe, '#!/bin/sh\necho "script: $2"\necho "node: $(command -v node)"\nnode -p process.version\n', { mode: 0o755 });
  const probed = await run('npm', ['test', `--script-shell=${probe}`], { cwd: clone, env });
  t.match(probed.stdout, /script: node test\/run\.ts/, 'npm test runs node test/run.ts');
  t.match(probed.stdout, new RegExp(`node: ${clone}/node_modules/\\.bin/node`), 'with the node of node_modules/.bin');
  t.match(probed.stdout, /^v22\./m, 'which is Node 22');

  const service = spawn('npm', ['start'], { cwd: clone, env: { ...env, DATA_DIR: dataDir, PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const output: string[] = [];
  const exited = new Promise<void>((resolve) => service.on('exit', () => resolve()));
  // SIGTERM first: the service then stops its embedded PostgreSQL, which runs in a session of its own
  // (a SIGKILL of the service's group would leave it writing into the directory being removed).
  t.teardown(async () => {
    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      try {
        process.kill(-service.pid!, signal);
      } catch {
        return; // gone
      }
      if (await Promise.race([exited.then(() => true), sleep(30_000).then(() => false)])) return;
    }
  });
  createInterface({ input: service.stdout! }).on('line', (line) => output.push(line));
  service.stderr!.on('data', (chunk) => output.push(String(chunk)));
  t.ok(await eventually(() => output.some((line) => line.includes('"msg":"ready"')), 120_000), 'npm start becomes ready', { output });
  const port = JSON.parse(output.find((line) => line.includes('"msg":"ready"'))!).port as number;
  t.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200, '/healthz answers 200');

  // Beside the running service, on its DATA_DIR (the cli attaches to the embedded database the service runs).
  const created = await run('npm', ['run', 'cli', '--', 'team', 'create', '--name', 'Newcomer'], { cwd: clone, env: { ...env, DATA_DIR: dataDir } });
  const team = JSON.parse(created.stdout.slice(created.stdout.indexOf('\n{') + 1));
  t.match(team, { team: { name: 'Newcomer' }, apiKey: { key: /^tws_/ } }, 'npm run cli -- team create works');

  const content = pngLike(3000);
  const { body, contentType } = multipartBody([{ content, fileName: 'first.png', contentType: 'image/png' }]);
  const uploaded = await fetch(`http://127.0.0.1:${port}/v1/cdn/media/${team.team.id}/upload/file`, {
    method: 'POST', headers: { authorization: `Bearer ${team.apiKey.key}`, 'content-type': contentType }, body,
  });
  t.equal(uploaded.status, 201, 'the service takes an upload');
  const media = (await uploaded.json()) as { publicUrl: string };
  t.same(Buffer.from(await (await fetch(media.publicUrl)).arrayBuffer()), content, 'and serves it at its public link');
  t.equal((await api(port, 'GET', '/')).status, 200, 'GET / answers');

  process.kill(-service.pid!, 'SIGTERM');
  await exited;
});
