import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import t, { type Test } from 'tap';
import { createTestDatabase } from '../helpers/database.ts';
import { api, repo, spawnService, type RunningService } from '../helpers/service-process.ts';
import { TEST_AUTH_SECRET } from '../helpers/server.ts';
import { eventually } from '../helpers/wait.ts';
import { multipartBody, pngLike } from '../helpers/uploads.ts';

// What the real service writes to its log: the access log, the start-up warning for unreachable links,
// and a quiet Ctrl-C.

const databaseUrl = await createTestDatabase(t);

async function service(t: Test, settings: Record<string, string> = {}): Promise<RunningService> {
  const dataDir = await mkdtemp(join(tmpdir(), 'media-logs-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  return spawnService(t, {
    env: {
      PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', DATABASE_URL: databaseUrl, DATA_DIR: dataDir, PORT: '0',
      AUTH_SECRET: TEST_AUTH_SECRET, LOG_LEVEL: 'info', ...settings,
    },
  });
}

function jsonLines(output: string[]): Record<string, any>[] {
  return output.flatMap((line) => {
    try {
      const parsed = JSON.parse(line);
      return parsed && typeof parsed === 'object' ? [parsed] : [];
    } catch {
      return [];
    }
  });
}

const accessLines = (running: RunningService) => jsonLines(running.output).filter((line) => line.msg === 'request' && line.component === 'access');

t.test('the access log: one line per request, route pattern, sizes, ids, never a key or a signature', async (t) => {
  const running = await service(t);
  const created = await api(running.port, 'POST', '/v1/admin/teams', { authSecret: TEST_AUTH_SECRET }, { name: 'Alpha' });
  const { team, apiKey } = created.body;
  const content = pngLike(2048);
  const { body, contentType } = multipartBody([{ content, fileName: 'shot.png', contentType: 'image/png' }]);
  const upload = await fetch(`http://127.0.0.1:${running.port}/v1/cdn/media/${team.id}/upload/file?tags=log`, {
    method: 'POST', headers: { authorization: `Bearer ${apiKey.key}`, 'content-type': contentType, 'x-request-id': 'upload-1' }, body,
  });
  t.equal(upload.status, 201);
  const media = (await upload.json()) as { id: string; publicUrl: string };
  const unauthorised = await fetch(`http://127.0.0.1:${running.port}/v1/cdn/media/${team.id}`, { headers: { authorization: 'Bearer tws_wrong_key_abc' } });
  t.equal(unauthorised.status, 401);
  // A private link's signature lives in its query: it must not reach the log.
  const secret = await api(running.port, 'POST', `/v1/cdn/media/${team.id}/upload`, { authorization: `Bearer ${apiKey.key}` }, {
    file: content.toString('base64'), fileName: 'private.png',
  });
  t.equal(secret.status, 201);
  const link = await api(running.port, 'GET', `/v1/cdn/media/${team.id}/${secret.body.id}`, { authorization: `Bearer ${apiKey.key}` });
  t.equal(link.status, 200);
  const signed = new URL(link.body.url);
  t.match(signed.search, /./, 'a signed link');
  const privateFile = await fetch(`http://127.0.0.1:${running.port}${signed.pathname}${signed.search}`);
  t.equal(privateFile.status, 200);
  await privateFile.arrayBuffer();
  const served = await fetch(media.publicUrl.replace(/^http:\/\/[^/]+/, `http://127.0.0.1:${running.port}`) + '?sig=should-not-be-logged');
  t.equal(served.status, 200);
  await served.arrayBuffer();

  t.ok(await eventually(() => accessLines(running).length >= 7), 'a line for each request');
  const lines = accessLines(running);
  const uploadLine = lines.find((line) => line.requestId === 'upload-1');
  t.match(uploadLine, {
    level: 30, method: 'POST', route: '/v1/cdn/media/:teamId/upload/file', status: 201, teamId: team.id,
    bytesIn: body.length, bytesOut: Number, durationMs: Number, mediaId: media.id, size: content.length,
  }, 'the upload, with its media id and size');
  t.ok(uploadLine!.bytesOut > 100, 'bytes out are counted');
  t.match(lines.find((line) => line.status === 401), { method: 'GET', route: '/v1/cdn/media/:teamId', teamId: team.id, bytesIn: 0 });
  const fileLine = lines.find((line) => line.route === '/media/team/:teamId/:file');
  t.match(fileLine, { status: 200, bytesOut: content.length, teamId: team.id }, 'a served file, with its size');
  t.match(lines.find((line) => line.route === '/v1/admin/teams'), { status: 201, teamId: null });

  const everything = running.output.join('\n');
  t.notOk(everything.includes(apiKey.key), 'the key is not logged');
  t.notOk(everything.includes('tws_wrong_key_abc'), 'nor a wrong key');
  t.notOk(everything.includes(TEST_AUTH_SECRET), 'nor the operator secret');
  t.notOk(everything.includes('should-not-be-logged'), 'nor a query string');
  for (const [name, value] of signed.searchParams) t.notOk(everything.includes(value), `nor the signed link's ${name}`);
  running.child.kill('SIGTERM');
  await running.exited;
});

t.test('ACCESS_LOG=false: no access lines', async (t) => {
  const running = await service(t, { ACCESS_LOG: 'false' });
  t.equal((await api(running.port, 'GET', '/healthz')).status, 200);
  t.equal((await api(running.port, 'GET', '/nowhere')).status, 404);
  running.child.kill('SIGTERM');
  await running.exited;
  t.same(accessLines(running), [], 'nothing logged per request');
});

t.test('HOST=0.0.0.0 without PUBLIC_URL warns that links are unreachable', async (t) => {
  const wildcard = await service(t, { HOST: '0.0.0.0' });
  const warning = jsonLines(wildcard.output).find((line) => line.level === 40 && /PUBLIC_URL/.test(line.msg));
  t.ok(warning, 'a warning at start-up');
  t.match(warning?.msg, /0\.0\.0\.0/, 'naming the address links will use');
  t.match(warning?.msg, /set PUBLIC_URL/);
  wildcard.child.kill('SIGTERM');
  await wildcard.exited;

  const named = await service(t, { HOST: '0.0.0.0', PUBLIC_URL: 'https://media.example.com' });
  t.notOk(jsonLines(named.output).some((line) => /PUBLIC_URL/.test(line.msg ?? '')), 'no warning with PUBLIC_URL');
  named.child.kill('SIGTERM');
  await named.exited;

  const loopback = await service(t);
  t.notOk(jsonLines(loopback.output).some((line) => /PUBLIC_URL/.test(line.msg ?? '')), 'nor on the default 127.0.0.1');
  loopback.child.kill('SIGTERM');
  await loopback.exited;
});

t.test('Ctrl-C on `npm start` (SIGINT to the whole process group) stops quietly', async (t) => {
  // The embedded database: it is the process that used to get the terminal's SIGINT too.
  const dataDir = await mkdtemp(join(tmpdir(), 'media-sigint-'));
  await chmod(dataDir, 0o755);
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const child = spawn('npm', ['start'], {
    cwd: repo,
    // A group of its own, as a terminal's foreground job is.
    detached: true,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout: string[] = [];
  const stderr: string[] = [];
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  t.teardown(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  });
  createInterface({ input: child.stdout! }).on('line', (line) => stdout.push(line));
  child.stderr!.on('data', (chunk) => stderr.push(String(chunk)));
  t.ok(await eventually(() => stdout.some((line) => line.includes('"msg":"ready"')), 90_000), 'npm start becomes ready', { stdout, stderr });
  const port = JSON.parse(stdout.find((line) => line.includes('"msg":"ready"'))!).port;
  t.equal((await api(port, 'GET', '/healthz')).status, 200);

  process.kill(-child.pid!, 'SIGINT');
  const end = await exited;
  // npm ends itself with the signal it got (a shell shows 130); the service below it exits 0 after "stopped".
  t.ok(end.code === 0 || end.code === 130 || end.signal === 'SIGINT', 'npm ends', end);
  t.ok(await eventually(() => stdout.some((line) => line.includes('"msg":"stopped"')), 10_000), 'the service logged "stopped"');
  const logged = jsonLines(stdout);
  t.same(logged.filter((line) => line.level >= 40), [], 'no warning or error in the log');
  const all = [...stdout, ...stderr].join('\n');
  t.notMatch(all, /(\n|\\n)\s+at \S/, 'no stack trace, printed or inside a JSON line');
  t.notMatch(all, /\(node:\d+\) \w*Warning/, 'no Node warning');
  // npm's own notes about the machine's npm configuration are not the service's.
  const serviceStderr = stderr.join('').split('\n').filter((line) => line.trim() !== '' && !line.startsWith('npm warn'));
  t.same(serviceStderr, [], 'nothing on stderr');
  const postmaster = await import('node:fs/promises').then((fs) => fs.readFile(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').catch(() => null));
  t.equal(postmaster, null, 'the embedded database was stopped cleanly (no postmaster.pid left)');
});
