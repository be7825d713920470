import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import t from 'tap';
import { startEmbeddedPostgres } from '../../src/db/embedded-postgres.ts';
import type { EmbeddedDatabase } from '../../src/db/embedded-postgres.ts';
import { connectPg } from '../helpers/database.ts';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const tmp = path.join(repo, '.test-data', `tmp-${randomBytes(4).toString('hex')}`);
const dataDir = path.join(tmp, 'data');
const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid');

const running: EmbeddedDatabase[] = [];
async function start(dir = dataDir, log?: (line: string) => void): Promise<EmbeddedDatabase> {
  const db = await startEmbeddedPostgres({ dataDir: dir, databaseName: 'app', ...(log ? { log } : {}) });
  running.push(db);
  return db;
}

async function query(url: string, sql: string): Promise<unknown[]> {
  const client = await connectPg(url);
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

/** Alive and not a zombie (an orphan nobody reaps stays one). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

function pidInFile(): number {
  return Number.parseInt(readFileSync(pidFile, 'utf8').split('\n')[0] ?? '', 10);
}

t.before(() => mkdir(tmp, { recursive: true }));
t.teardown(async () => {
  await Promise.all(running.map((db) => db.stop()));
  await rm(tmp, { recursive: true, force: true });
});

t.test('first start initialises the cluster and serves queries on 127.0.0.1', async (t) => {
  const db = await start();
  const url = new URL(db.url);
  t.equal(url.hostname, '127.0.0.1');
  t.equal(url.pathname, '/app');
  t.same(await query(db.url, 'select 1 as one'), [{ one: 1 }]);
  t.same(await query(db.url, "select current_setting('listen_addresses') as l"), [{ l: '127.0.0.1' }]);
  const credentials = path.join(dataDir, 'postgres-credentials.json');
  t.equal(statSync(credentials).mode & 0o777, 0o600, 'credentials file is 0600');
  t.match(JSON.parse(await readFile(credentials, 'utf8')), { user: 'postgres', password: /^[0-9a-f]{48}$/ });
  await query(db.url, "create table kept (v text); insert into kept values ('still here')");
  await db.stop();
  await db.stop();
  t.notOk(existsSync(pidFile), 'server stopped, stop() idempotent');
});

t.test('a restart keeps the data and the port', async (t) => {
  const before = JSON.parse(await readFile(path.join(dataDir, 'postgres-owner.json'), 'utf8')) as { pid?: number; port: number };
  t.notOk(before.pid, 'a stopped server has no owner on record, only its port');
  const db = await start();
  t.same(await query(db.url, 'select v from kept'), [{ v: 'still here' }]);
  t.equal(Number(new URL(db.url).port), before.port, 'the new server listens on the port of the last one (instances still configured with it reconnect)');
  await db.stop();
});

t.test('a server orphaned by a SIGKILLed node process is taken over on the next start, not restarted', async (t) => {
  const moduleUrl = pathToFileURL(path.join(repo, 'src/db/embedded-postgres.ts')).href;
  const script =
    `const { startEmbeddedPostgres } = await import(${JSON.stringify(moduleUrl)});` +
    `const db = await startEmbeddedPostgres({ dataDir: ${JSON.stringify(dataDir)}, databaseName: 'app' });` +
    `console.log(db.url); setInterval(() => {}, 60_000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const childUrl = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(out.trim());
    });
    child.once('exit', (code) => reject(new Error(`child exited early (${code})`)));
  });
  t.same(await query(childUrl, 'select 1 as one'), [{ one: 1 }], 'child started a server');
  child.kill('SIGKILL');
  await new Promise((resolve) => child.once('exit', resolve));
  const orphan = pidInFile();
  t.ok(isAlive(orphan), 'postgres outlived its SIGKILLed parent');

  // Another instance on the same DATA_DIR still uses it, on a connection opened before the SIGKILL.
  const other = await connectPg(childUrl);
  t.teardown(() => other.end().catch(() => undefined));
  // The cli (takeOver: false) uses it and leaves it running.
  const shared = await startEmbeddedPostgres({ dataDir, databaseName: 'app', takeOver: false });
  t.equal(shared.url, childUrl, 'takeOver false: the running server is used');
  await shared.stop();
  t.ok(isAlive(orphan), 'and left running by stop()');
  const lines: string[] = [];
  const db = await start(dataDir, (line) => lines.push(line));
  t.ok(lines.some((line) => line.includes(`reusing the PostgreSQL server (pid ${orphan}`)), 'logged the reuse');
  t.equal(pidInFile(), orphan, 'the same server runs');
  t.equal(db.url, childUrl, 'on the same port');
  t.same((await other.query('select 1 as one')).rows, [{ one: 1 }], 'the other connection was not cut');
  t.match(JSON.parse(await readFile(path.join(dataDir, 'postgres-owner.json'), 'utf8')), { pid: process.pid }, 'this process owns it now');
  t.same(await query(db.url, 'select v from kept'), [{ v: 'still here' }]);
  await other.end();
  await db.stop();
  t.notOk(isAlive(orphan), 'and stops it on stop()');
  t.notOk(existsSync(pidFile), 'cleanly (postmaster.pid removed)');
});

t.test('a half-initialised cluster directory is initialised again', async (t) => {
  const dir = path.join(tmp, 'half');
  await mkdir(path.join(dir, 'postgres', 'base'), { recursive: true });
  await writeFile(path.join(dir, 'postgres', 'postgresql.conf'), '# interrupted initdb\n');
  const db = await start(dir);
  t.same(await query(db.url, 'select 1 as one'), [{ one: 1 }]);
  await db.stop();
});

t.test('a data dir the postgres user cannot reach gives a clear error', { skip: process.getuid?.() !== 0 && 'only meaningful as root' }, async (t) => {
  const locked = path.join(tmp, 'locked');
  await mkdir(locked, { mode: 0o700 });
  await chmod(locked, 0o700);
  await t.rejects(start(path.join(locked, 'data')), {
    message: new RegExp(`cannot enter ${locked.replaceAll('/', '\\/')} \\(mode 0700.*Set DATA_DIR`),
  });
  t.notOk(existsSync(path.join(locked, 'data', 'postgres')), 'no cluster was created');
});
