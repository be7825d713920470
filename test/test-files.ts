// Runs tap test files, a few at a time, each as its own `node FILE` process, and reports like tap's
// runner: a file's TAP output indented under `# Subtest: FILE`, then `ok N - FILE # time=…ms`.
//
// Why not `tap`'s own runner: it starts every test file with `--import @tapjs/processinfo/import`
// (and puts it into NODE_OPTIONS, so every node process a test starts loads it too), plus the mock
// plugin's loader and --enable-source-maps. Those hooks route every module load through a loader
// thread: importing src/app.ts took 3.1-4.3 s of CPU under them against 1.5-1.8 s without, in every
// test file and in every service or cli process the tests start (the suite starts hundreds), and the
// coverage they collect is switched off here anyway. `npx tap FILE` still runs any file.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Parser, type FinalResults } from 'tap-parser';

export interface TapSettings {
  /** Files run at once. */
  jobs: number;
  /** A file still running after this long is stopped and fails (tap's `timeout`, also its root test's). */
  timeoutSeconds: number;
  /** Flags for node before the file (tap's `node-arg`). */
  nodeArgs: string[];
  /** What the file list is made of when no file is named (tap's `include`, one `dir/**\/*.suffix` pattern). */
  include: string[];
}

/** The `tap` section of package.json, so that `npm test` and `npx tap` agree. */
export function tapSettings(repo: string): TapSettings {
  const config = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')).tap ?? {};
  return {
    jobs: Number(process.env.TEST_JOBS ?? config.jobs ?? 2),
    timeoutSeconds: Number(config.timeout ?? 30),
    nodeArgs: config['node-arg'] ?? [],
    include: config.include ?? ['test/**/*.test.ts'],
  };
}

/**
 * The files that took longest on 2 cores (40 s to 2 min each, mostly waiting on npm, child
 * processes and timeouts): started first, so that the run does not end waiting on one of them.
 * Only the order depends on this list.
 */
const SLOW_FIRST = [
  'newcomer', 'client-cli', 'tenant-isolation', 'crash-sweeper', 'early-refusals', 'cli-process', 'clients',
  'storage-migrate-fs-to-s3', 'processes', 'shared-embedded-database', 'service-logs', 'crash-restart', 'verification-tokens',
  'service-process', 'backup-restore', 'database-export-import',
].map((name) => `test/integration/${name}.test.ts`);

/** `files` with the slow ones first, the rest as given. */
export function slowFirst(files: string[]): string[] {
  const slow = SLOW_FIRST.filter((file) => files.includes(file));
  return [...slow, ...files.filter((file) => !slow.includes(file))];
}

/** The files `include` names, sorted as tap sorts them. */
export function includedFiles(repo: string, include: string[]): string[] {
  const files: string[] = [];
  for (const pattern of include) {
    const match = /^(.*?)\/\*\*\/\*(\.[^/*]+)$/.exec(pattern);
    if (!match) throw new Error(`tap include pattern ${pattern}: only DIR/**/*.SUFFIX is understood here`);
    const [, dir, suffix] = match as unknown as [string, string, string];
    for (const entry of readdirSync(path.join(repo, dir), { recursive: true, withFileTypes: true })) {
      if (entry.isFile() && entry.name.endsWith(suffix)) files.push(path.relative(repo, path.join(entry.parentPath, entry.name)));
    }
  }
  return [...new Set(files)].sort();
}

interface FileOutcome {
  ok: boolean;
  results: FinalResults | null;
  /** Its TAP output and stderr as they were printed, for the failure excerpt. */
  stdout: string;
  stderr: string;
  /** What the file printed: its stderr, then its TAP indented under `# Subtest: FILE`. */
  output: string;
  /** Why it failed beyond its own assertions: a timeout or an exit status. */
  why: string;
  ms: number;
}

/** A failed file, told in few lines: for the recap at the end of `npm test`, where CI's log tail shows it. */
export interface FileFailure {
  file: string;
  why: string;
  /** Its failed assertions with their diagnostics, and the end of its stderr. */
  excerpt: string;
}

export interface RunSummary {
  ok: boolean;
  files: number;
  failedFiles: string[];
  failures: FileFailure[];
  total: number;
  pass: number;
  fail: number;
  skip: number;
  todo: number;
}

/** Stops a running file's process group: SIGTERM, then SIGKILL. */
function stopGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

const running = new Set<number>();

/** Ends every file still running (the caller got SIGINT or SIGTERM). */
export function stopRunningFiles(signal: NodeJS.Signals): void {
  for (const pid of running) stopGroup(pid, signal);
}

function runFile(repo: string, file: string, settings: TapSettings, env: NodeJS.ProcessEnv): Promise<FileOutcome> {
  return new Promise((resolve) => {
    const started = performance.now();
    // TEST_CPU_LOG=PATH: each file's CPU (its own and its waited-for children's) appended to PATH by GNU time.
    const cpuLog = env.TEST_CPU_LOG;
    const [command, args]: [string, string[]] = cpuLog
      ? ['/usr/bin/time', ['-a', '-o', cpuLog, '-f', `%U %S %e ${file}`, process.execPath, ...settings.nodeArgs, file]]
      : [process.execPath, [...settings.nodeArgs, file]];
    const child = spawn(command, args, {
      cwd: repo,
      // TAP_TIMEOUT: the root test's own timeout, as tap's runner sets it.
      env: { ...env, TAP: '1', TAP_TIMEOUT: String(settings.timeoutSeconds) },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, so that a timeout ends what the file started too.
      detached: true,
    });
    if (child.pid !== undefined) running.add(child.pid);
    const parser = new Parser();
    let results: FinalResults | null = null;
    parser.on('complete', (final: FinalResults) => (results = final));
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => {
      stdout.push(chunk);
      parser.write(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      stopGroup(child.pid, 'SIGTERM');
      setTimeout(() => stopGroup(child.pid, 'SIGKILL'), 10_000).unref();
    }, (settings.timeoutSeconds + 10) * 1000);
    child.once('error', (error) => stderr.push(Buffer.from(`could not start node: ${error.message}\n`)));
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (child.pid !== undefined) running.delete(child.pid);
      parser.end();
      const ms = performance.now() - started;
      const ok = code === 0 && !timedOut && results?.ok === true;
      const why = timedOut ? ` (timed out after ${settings.timeoutSeconds} s)` : code !== 0 ? ` (exit ${code ?? signal})` : '';
      const indented = Buffer.concat(stdout).toString('utf8').replace(/\n$/, '').split('\n').map((line) => (line ? `    ${line}` : line)).join('\n');
      const errors = Buffer.concat(stderr).toString('utf8');
      const tap = Buffer.concat(stdout).toString('utf8');
      resolve({ ok, results, stdout: tap, stderr: errors, output: `${errors}# Subtest: ${file}\n${indented}\n`, why, ms });
    });
  });
}

/**
 * The lines that say why a file failed: each `not ok` line with the diagnostics under it (the
 * YAML block tap prints, up to `perFailure` lines), then the last lines of its stderr.
 */
export function failureExcerpt(stdout: string, stderr: string, perFailure = 25, stderrLines = 15): string {
  const lines = stdout.split('\n');
  const picked: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (!/^\s*not ok /.test(line)) continue;
    const indent = /^\s*/.exec(line)![0].length;
    picked.push(line);
    // The diagnostics are the more-indented lines right under it, up to the YAML block's end.
    for (let j = i + 1, n = 0; j < lines.length && n < perFailure; j++, n++) {
      const next = lines[j]!;
      if (next.trim() === '' || /^\s*/.exec(next)![0].length <= indent) break;
      picked.push(next);
      if (next.trim() === '...') break;
    }
  }
  const tail = stderr.trimEnd().split('\n').slice(-stderrLines).filter((line) => line !== '');
  if (tail.length > 0) picked.push('  stderr (last lines):', ...tail.map((line) => `    ${line}`));
  return picked.join('\n');
}

/** Runs `files`, `settings.jobs` at a time, printing each file's report when it ends. */
export async function runTestFiles(repo: string, files: string[], settings: TapSettings, env: NodeJS.ProcessEnv): Promise<RunSummary> {
  const summary: RunSummary = { ok: true, files: files.length, failedFiles: [], failures: [], total: 0, pass: 0, fail: 0, skip: 0, todo: 0 };
  const started = performance.now();
  let next = 0;
  let reported = 0;
  const worker = async () => {
    while (next < files.length) {
      const file = files[next++]!;
      const outcome = await runFile(repo, file, settings, env);
      reported++;
      process.stdout.write(`${outcome.output}${outcome.ok ? 'ok' : 'not ok'} ${reported} - ${file}${outcome.why} # time=${outcome.ms.toFixed(3)}ms\n\n`);
      const counts = outcome.results;
      summary.total += counts?.count ?? 0;
      summary.pass += counts?.pass ?? 0;
      summary.fail += counts?.fail ?? 0;
      summary.skip += counts?.skip ?? 0;
      summary.todo += counts?.todo ?? 0;
      if (!outcome.ok) {
        summary.ok = false;
        summary.failedFiles.push(file);
        summary.failures.push({ file, why: outcome.why, excerpt: failureExcerpt(outcome.stdout, outcome.stderr) });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(settings.jobs, files.length)) }, worker));
  const { total, pass, fail, skip, todo } = summary;
  process.stdout.write(`1..${files.length}\n# { total: ${total}, pass: ${pass}${fail ? `, fail: ${fail}` : ''}${skip ? `, skip: ${skip}` : ''}${todo ? `, todo: ${todo}` : ''} }\n`);
  if (summary.failedFiles.length > 0) process.stdout.write(`# failed files:\n${summary.failedFiles.map((file) => `#   ${file}\n`).join('')}`);
  process.stdout.write(`# time=${(performance.now() - started).toFixed(3)}ms\n`);
  return summary;
}
