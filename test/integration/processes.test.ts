import { spawn } from 'node:child_process';
import { chmod, mkdtemp, readdir, readFile, readlink, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { api, repo, spawnService } from '../helpers/service-process.ts';
import { multipartBody, pngLike, uploadPath } from '../helpers/uploads.ts';
import { eventually, sleep } from '../helpers/wait.ts';

// HTTP_PROCESSES=2 (issue 18.6): one `npm start`, a supervisor and two service processes sharing the port,
// on the embedded PostgreSQL the supervisor owns. Which process holds a connection is read from /proc.

// About 35 s on a quiet machine (a supervisor, two service processes and a replacement, two stray starts); far more when it is loaded.
t.setTimeout(300_000);

if (process.env.TEST_PG_KIND === 'server') {
  t.skip('runs in the embedded pass only: this file does not use the second pass\'s database server', () => {});
  process.exit(0);
}

async function tempDataDir(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const dataDir = await mkdtemp(join(tmpdir(), 'media-processes-'));
  await chmod(dataDir, 0o755); // the embedded PostgreSQL runs as the postgres user
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  return dataDir;
}

const baseEnv = (dataDir: string, settings: Record<string, string> = {}) => ({
  PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info', ...settings,
});

const supervisorReady = (line: string) => line.includes('"msg":"ready"') && line.includes('"processes":');

/** Pids of the processes whose parent is `parent`, with their command line. */
async function childrenOf(parent: number): Promise<{ pid: number; command: string }[]> {
  const found: { pid: number; command: string }[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== parent) continue;
      found.push({ pid: Number(entry), command: (await readFile(`/proc/${entry}/cmdline`, 'utf8')).replaceAll('\0', ' ') });
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

async function serviceProcesses(supervisor: number): Promise<number[]> {
  return (await childrenOf(supervisor)).filter((child) => child.command.includes('service-process.ts')).map((child) => child.pid).sort();
}

/** Whether `pid` still exists as a process that has not exited (a zombie counts as gone). */
async function isRunning(pid: number): Promise<boolean> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/**
 * For each client port (a connection from this test to the service on `servicePort`), the pid of the
 * process that holds the server's end: /proc/net/tcp names the socket inode, /proc/<pid>/fd its holder.
 */
async function connectionHolders(servicePort: number, clientPorts: number[], candidates: number[]): Promise<Map<number, number>> {
  const inodeToClientPort = new Map<string, number>();
  for (const line of (await readFile('/proc/net/tcp', 'utf8')).split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 10) continue;
    const localPort = Number.parseInt(fields[1]!.split(':')[1]!, 16);
    const remotePort = Number.parseInt(fields[2]!.split(':')[1]!, 16);
    if (localPort === servicePort && clientPorts.includes(remotePort)) inodeToClientPort.set(fields[9]!, remotePort);
  }
  const holders = new Map<number, number>();
  for (const pid of candidates) {
    for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [] as string[])) {
      const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      const clientPort = inode ? inodeToClientPort.get(inode) : undefined;
      if (clientPort !== undefined) holders.set(clientPort, pid);
    }
  }
  return holders;
}

/** GET /healthz on a new connection that stays open: its status and the connection's local port. */
async function healthzOnNewConnection(port: number): Promise<{ status: number; socket: Socket }> {
  const socket = connect(port, '127.0.0.1');
  socket.setEncoding('latin1');
  return new Promise((resolve, reject) => {
    let text = '';
    socket.on('error', reject);
    socket.on('connect', () => socket.write('GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n'));
    socket.on('data', (chunk: string) => {
      text += chunk;
      if (text.includes('\r\n\r\n')) resolve({ status: Number(text.split(' ')[1]), socket });
    });
  });
}

interface Upload {
  clientPort: Promise<number>;
  response: Promise<{ status: number; body: any }>;
  finish(): void;
}

/** A multipart upload on a connection of its own; with `hold`, half the body is sent and the rest waits for finish(). */
function upload(port: number, teamId: string, key: string, content: Buffer, hold: boolean): Upload {
  const { body, contentType } = multipartBody([{ content, fileName: 'shot.png' }]);
  const request = httpRequest(`http://127.0.0.1:${port}${uploadPath(teamId)}`, {
    method: 'POST',
    agent: false,
    headers: { authorization: `Bearer ${key}`, 'content-type': contentType, 'content-length': String(body.length) },
  });
  const clientPort = new Promise<number>((resolve) => request.on('socket', (socket) => socket.on('connect', () => resolve(socket.localPort!))));
  const response = new Promise<{ status: number; body: any }>((resolve, reject) => {
    request.on('response', (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    request.on('error', reject);
  });
  const half = Math.floor(body.length / 2);
  if (hold) request.write(body.subarray(0, half));
  else request.end(body);
  return { clientPort, response, finish: () => request.end(body.subarray(half)) };
}

/** Runs `npm start` that is expected to fail; resolves with its exit code and output. */
function runToExit(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['src/main.ts'], { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) => child.on('exit', (code) => {
    clearTimeout(timer);
    resolve({ code, output });
  }));
}

t.test('HTTP_PROCESSES=2: two processes share the port, uploads, /metrics of both, a killed process is replaced, SIGTERM drains all', async (t) => {
  const dataDir = await tempDataDir(t);
  const service = await spawnService(t, { env: baseEnv(dataDir, { HTTP_PROCESSES: '2' }), isReady: supervisorReady });
  const supervisor = service.child.pid!;
  const secretLines = service.output.filter((line) => line.startsWith('Generated operator secret'));
  t.equal(secretLines.length, 1, 'the generated operator secret is printed once, by the supervisor');
  const secret = service.output[service.output.indexOf(secretLines[0]!) + 1]!;

  const workers = await serviceProcesses(supervisor);
  t.equal(workers.length, 2, 'two service processes run under the supervisor');
  const postgres = Number((await readFile(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0]);
  t.ok((await childrenOf(supervisor)).some((child) => child.pid === postgres), 'the embedded PostgreSQL is the supervisor\'s');

  // Both processes accept connections on the one port and answer on them.
  const probes = await Promise.all(Array.from({ length: 16 }, () => healthzOnNewConnection(service.port)));
  t.teardown(() => probes.forEach((probe) => probe.socket.destroy()));
  t.same(probes.map((probe) => probe.status), probes.map(() => 200), 'every connection is answered 200');
  const holders = await connectionHolders(service.port, probes.map((probe) => probe.socket.localPort!), workers);
  t.equal(holders.size, probes.length, 'every connection is held by one of the service processes');
  t.same([...new Set(holders.values())].sort(), workers, 'and both processes hold some of them');

  const metrics = await fetch(`http://127.0.0.1:${service.port}/metrics`).then((response) => response.text());
  t.match(metrics, /^media_metrics_processes 2$/m, 'a scrape reaching one process covers both');
  t.match(metrics, /^media_http_responses_total\{route="\/healthz",status="200"\} 16$/m, 'the responses of both processes are summed');

  // A second `npm start` on the same port fails instead of taking a share of the connections.
  const otherDir = await tempDataDir(t);
  for (const processes of ['1', '2']) {
    const stray = await runToExit(baseEnv(otherDir, { HTTP_PROCESSES: processes, PORT: String(service.port), AUTH_SECRET: 'stray-operator-secret-0123' }));
    t.equal(stray.code, 1, `a second start with HTTP_PROCESSES=${processes} on the port exits 1`);
    t.match(stray.output, `Cannot listen on 127.0.0.1:${service.port}`);
  }

  // Uploads work, whichever process a connection reaches.
  const team = await api(service.port, 'POST', '/v1/admin/teams', { authSecret: secret }, { name: 'Processes' });
  t.equal(team.status, 201, 'a team is created', { body: team.body });
  const teamId = team.body.team.id as string;
  const key = team.body.apiKey.key as string;
  const uploads = Array.from({ length: 8 }, () => upload(service.port, teamId, key, pngLike(64 * 1024), false));
  const answers = await Promise.all(uploads.map((each) => each.response));
  t.same(answers.map((answer) => answer.status), answers.map(() => 201), 'every upload is created');
  const listed = await api(service.port, 'GET', `/v1/cdn/media/${teamId}`, { authorization: `Bearer ${key}` });
  t.equal(listed.body.totalCount, 8, 'and listed');

  // A killed process is replaced; the other one serves meanwhile.
  const [killed, survivor] = workers as [number, number];
  process.kill(killed, 'SIGKILL');
  t.ok(await eventually(() => service.output.some((line) => line.includes('restarting it') && line.includes(`"childPid":${killed}`))), 'the supervisor logs the crash');
  const meanwhile = await Promise.all(Array.from({ length: 6 }, () => healthzOnNewConnection(service.port)));
  meanwhile.forEach((probe) => probe.socket.destroy());
  t.same(meanwhile.map((probe) => probe.status), meanwhile.map(() => 200), 'the surviving process answers meanwhile');
  t.ok(await eventually(async () => (await serviceProcesses(supervisor)).length === 2, 30_000), 'a replacement is started');
  const replaced = await serviceProcesses(supervisor);
  const replacement = replaced.find((pid) => pid !== survivor)!;
  t.not(replacement, killed, 'with a new pid');
  t.ok(await eventually(() => service.output.some((line) => line.includes('service process ready') && line.includes(`"childPid":${replacement}`)), 30_000), 'which becomes ready');

  // SIGTERM with uploads in flight on both processes: all finish, everything exits, nothing is left running.
  const held: Upload[] = [];
  const heldBy = new Set<number>();
  for (let i = 0; i < 30 && heldBy.size < 2; i++) {
    const next = upload(service.port, teamId, key, pngLike(256 * 1024), true);
    held.push(next);
    const clientPort = await next.clientPort;
    let holder: number | undefined;
    await eventually(async () => (holder = (await connectionHolders(service.port, [clientPort], replaced)).get(clientPort)) !== undefined);
    if (holder !== undefined) heldBy.add(holder);
  }
  t.equal(heldBy.size, 2, 'both processes have an upload in flight');
  // Held by a process is not yet admitted: a request still on its way to its route when SIGTERM comes is refused (503).
  const inFlight = async () => Number(/^media_uploads_in_flight (\d+)$/m.exec(await fetch(`http://127.0.0.1:${service.port}/metrics`).then((response) => response.text()))?.[1]);
  t.ok(await eventually(async () => (await inFlight()) === held.length, 30_000), `all ${held.length} held uploads hold an admission slot`);
  service.child.kill('SIGTERM');
  await sleep(500);
  const draining = await healthzOnNewConnection(service.port);
  draining.socket.destroy();
  t.equal(draining.status, 503, 'healthz answers 503 while the processes drain');
  for (const each of held) each.finish();
  const drained = await Promise.all(held.map((each) => each.response));
  t.same(drained.map((answer) => answer.status), drained.map(() => 201), 'every upload in flight finishes');
  t.equal(await service.exited, 0, 'the supervisor exits 0');
  for (const pid of [...replaced, postgres]) t.ok(await eventually(async () => !(await isRunning(pid))), `pid ${pid} is gone`);
});

t.test('HTTP_PROCESSES=2: a database that cannot be reached fails the start with exit 1', async (t) => {
  const dataDir = await tempDataDir(t);
  const failed = await runToExit(baseEnv(dataDir, {
    HTTP_PROCESSES: '2', DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none', AUTH_SECRET: 'unreachable-operator-secret-0123',
  }));
  t.equal(failed.code, 1, 'exit 1');
  t.match(failed.output, 'migrating the database failed', 'the migration process says why');
  t.match(failed.output, '"msg":"start-up failed"');
  t.notMatch(failed.output, 'starting the service processes', 'no service process was started');
});
