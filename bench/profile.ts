/**
 * Where the service's main thread spends its time per upload: `npm run bench:profile [-- options]`.
 *
 *   --workload screenshot|2mib|log|mixed|large|large-json|both
 *                                    256 KiB multipart at 64 in flight, 2 MiB at 16, 8 KiB JSON at 32,
 *                                    the bench's mixed fleet at 32, 100 MiB multipart at 4,
 *                                    100 MiB as a JSON data URI at 4
 *                                    (default both: screenshot and log)
 *   --uploads N                      uploads per workload after a warm-up of N/4 (default 4000)
 *   --concurrency N                  uploads in flight instead of the workload's own
 *   --driver fs|s3                   the storage driver (default fs); s3 uses the S3 server of the
 *                                    TEST_S3_* variables (default the test server on :7480), under a
 *                                    prefix of its own emptied afterwards: keep N x size below the
 *                                    server's room (the test server's RAM-backed OSD holds 4 GiB)
 *   --pg URL                         PostgreSQL server for the scratch database (as bench/run.ts)
 *   --prefill N                      first write N older media rows of the team straight into the
 *                                    database (bench/lib/prefill.ts): the indexes at a fleet's size
 *   --out DIR                        where the .cpuprofile files go (default bench/results/profiles)
 *   --perf                           also record the process with Linux `perf` (cpu-clock, kernel
 *                                    stacks included; JIT frames named by --perf-basic-prof) and print
 *                                    its top symbols: where the kernel half of the CPU goes
 *
 * Starts the service with `--cpu-prof`, sends the warm-up and then the measured uploads
 * from the bench's load client (a separate process), stops the service (the profile is written on
 * exit), and sums the profile's samples taken during the measured phase by what they belong to:
 * uWS, our HTTP layer, the parsers, the upload actor, storage, the database client, logging, GC,
 * Node internals. Prints microseconds per upload for each, and the functions with the most self time,
 * and the mean time per upload in each stage (queue, receive, store, commit) from the service's
 * media_upload_stage_seconds histogram.
 * Run it on a quiet machine: sampling counts wall time on the main thread.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { LoadClient } from './lib/client-handle.ts';
import type { Job } from './lib/load-client.ts';
import { KiB, MiB, type Workload } from './lib/payloads.ts';
import { emptyPrefix, ensureBucket, s3Client, s3Settings } from './lib/s3.ts';
import { repo } from './lib/servers.ts';
import { prefillMedia } from './lib/prefill.ts';
import { dropDatabase, resetDatabase, s3RequestsByOperation, startService } from './lib/service.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const WORKLOADS: Record<string, { workload: Workload; concurrency: number; title: string }> = {
  screenshot: {
    title: '256 KiB multipart, 64 in flight',
    workload: { body: 'multipart', content: 'png', size: { kind: 'fixed', bytes: 256 * KiB } },
    concurrency: 64,
  },
  '2mib': {
    title: '2 MiB multipart, 16 in flight',
    workload: { body: 'multipart', content: 'png', size: { kind: 'fixed', bytes: 2 * MiB } },
    concurrency: 16,
  },
  log: {
    title: '8 KiB JSON (base64), 32 in flight',
    workload: { body: 'json-base64', content: 'log', size: { kind: 'fixed', bytes: 8 * KiB } },
    concurrency: 32,
  },
  mixed: {
    title: 'mixed fleet: 90% 256 KiB-2 MiB, 10% 32 MiB multipart, 32 in flight',
    workload: { body: 'multipart', content: 'png', size: { kind: 'mixed', minBytes: 256 * KiB, maxBytes: 2 * MiB, largeBytes: 32 * MiB, largeShare: 0.1 } },
    concurrency: 32,
  },
  large: {
    title: '100 MiB multipart, 4 in flight',
    workload: { body: 'multipart', content: 'png', size: { kind: 'fixed', bytes: 100 * MiB } },
    concurrency: 4,
  },
  'large-json': {
    title: '100 MiB JSON data URI, 4 in flight',
    workload: { body: 'json-datauri', content: 'png', size: { kind: 'fixed', bytes: 100 * MiB } },
    concurrency: 4,
  },
};

/** What a sample's function belongs to, from its script URL (first match wins). */
const CATEGORIES: [string, (url: string, name: string) => boolean][] = [
  ['gc', (_url, name) => name === '(garbage collector)'],
  ['idle', (_url, name) => name === '(idle)'],
  ['native/program', (_url, name) => name === '(program)' || name === '(root)'],
  ['uWS', (url) => url.includes('uWebSockets.js') || url.includes('uws-pack')],
  ['http layer (src/http)', (url) => url.includes('/src/http/')],
  ['parsers (src/uploads/parsers)', (url) => url.includes('/src/uploads/parsers/')],
  ['file type/hash (src/uploads/sniffing, src/uploads/hashing)', (url) => url.includes('/src/uploads/sniffing/') || url.includes('/src/uploads/hashing/') || url.includes('xxhash')],
  ['auth/limits (src/auth, src/limits, src/uploads/admission)', (url) => url.includes('/src/auth/') || url.includes('/src/limits/') || url.includes('/src/uploads/admission/')],
  ['upload actor/service (src/uploads)', (url) => url.includes('/src/uploads/')],
  ['storage (src/storage)', (url) => url.includes('/src/storage/')],
  ['domain/db (src/domain, src/db)', (url) => url.includes('/src/domain/') || url.includes('/src/db/')],
  ['other src', (url) => url.includes('/src/')],
  ['database client (pg, MikroORM, kysely)', (url) => /node_modules\/(pg|pg-[a-z-]+|@mikro-orm|kysely|postgres-[a-z]+)\//.test(url)],
  ['logging (pino)', (url) => /node_modules\/(pino|sonic-boom|fast-redact|thread-stream)/.test(url)],
  ['p-queue / rate limiter', (url) => /node_modules\/(p-queue|rate-limiter-flexible|eventemitter3)/.test(url)],
  ['other libraries', (url) => url.includes('node_modules')],
  ['node fs', (url) => /node:internal\/fs|node:fs/.test(url)],
  ['node streams/buffers', (url) => /node:internal\/(streams|buffer)|node:buffer|node:stream/.test(url)],
  ['node timers/promises/events', (url) => /node:internal\/(timers|process\/task_queues|event_target|events|abort)|node:events|node:timers/.test(url)],
  ['node other', (url) => url.startsWith('node:')],
  ['builtins (no script)', () => true],
];

function categorize(node: ProfileNode): string {
  const { url, functionName } = node.callFrame;
  for (const [name, test] of CATEGORIES) if (test(url, functionName)) return name;
  return 'builtins (no script)';
}

function parseArgs(argv: string[]) {
  const options = {
    workloads: ['screenshot', 'log'],
    uploads: 4000,
    pg: process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    out: join(repo, 'bench', 'results', 'profiles'),
    perf: false,
    driver: 'fs' as 'fs' | 's3',
    concurrency: undefined as number | undefined,
    prefill: 0,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => argv[++i] ?? '';
    if (arg === '--workload') {
      const chosen = value();
      options.workloads = chosen === 'both' ? ['screenshot', 'log'] : [chosen];
    } else if (arg === '--uploads') options.uploads = Number(value());
    else if (arg === '--pg') options.pg = value();
    else if (arg === '--out') options.out = value();
    else if (arg === '--perf') options.perf = true;
    else if (arg === '--concurrency') options.concurrency = Number(value());
    else if (arg === '--prefill') options.prefill = Number(value());
    else if (arg === '--driver') {
      const driver = value();
      if (driver !== 'fs' && driver !== 's3') throw new Error(`unknown driver ${driver}`);
      options.driver = driver;
    }
    else throw new Error(`unknown option ${arg}`);
  }
  for (const name of options.workloads) if (!WORKLOADS[name]) throw new Error(`unknown workload ${name}`);
  return options;
}

/** Self time of the samples taken between `from` and `to` (wall clock, µs), by category and by function. */
function summarize(profile: CpuProfile, from: number, to: number) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const byCategory = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let time = profile.startTime;
  let total = 0;
  for (let index = 0; index < profile.samples.length; index++) {
    time += profile.timeDeltas[index]!;
    if (time < from || time > to) continue;
    const delta = profile.timeDeltas[index + 1] ?? 0;
    const node = byId.get(profile.samples[index]!)!;
    const category = categorize(node);
    byCategory.set(category, (byCategory.get(category) ?? 0) + delta);
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url ? `${url.replace(/^.*\/(node_modules|src)\//, '$1/')}:${lineNumber + 1}` : '';
    const label = `${functionName || '(anonymous)'} ${where}`.trim();
    byFunction.set(label, (byFunction.get(label) ?? 0) + delta);
    total += delta;
  }
  return { byCategory, byFunction, total };
}

async function prefillLibrary(databaseUrl: string, teamId: string, rows: number): Promise<void> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const keyId = (await db.query<{ id: string }>('select id from api_key where team_id = $1 limit 1', [teamId])).rows[0]!.id;
    await prefillMedia(db, { teamId, keyId, rows, ids: 'v7' });
  } finally {
    await db.end();
  }
}

async function profileWorkload(name: string, options: ReturnType<typeof parseArgs>): Promise<void> {
  const { workload, title } = WORKLOADS[name]!;
  const concurrency = options.concurrency ?? WORKLOADS[name]!.concurrency;
  const dataDir = join(os.tmpdir(), `media-bench-profile-${randomBytes(4).toString('hex')}`);
  const profileDir = join(options.out, `${new Date().toISOString().replace(/[:.]/g, '-')}-${name}`);
  await mkdir(profileDir, { recursive: true });
  const databaseUrl = await resetDatabase(options.pg, 'media_bench_profile');
  const client = new LoadClient();
  const s3 = options.driver === 's3' ? await openBucket() : null;
  const s3KeyPrefix = `profile-${randomBytes(4).toString('hex')}/`;
  const service = await startService(
    {
      driver: options.driver, databaseUrl, dataDir, s3: s3?.settings ?? null, s3KeyPrefix, authSecret: randomBytes(24).toString('hex'),
      // BENCH_SERVICE_NODE_OPTIONS (as in the bench) adds to the profiler's own options.
      extra: { NODE_OPTIONS: [`--cpu-prof --cpu-prof-dir=${profileDir}`, options.perf ? '--perf-basic-prof' : '', process.env.BENCH_SERVICE_NODE_OPTIONS ?? ''].filter(Boolean).join(' ') },
    },
    `service-profile-${name}`,
  );
  try {
    if (options.prefill > 0) await prefillLibrary(databaseUrl, service.teamId, options.prefill);
    await client.start();
    const target = { kind: 'http' as const, origin: service.origin, teamId: service.teamId, apiKey: service.apiKey };
    const job = (uploads: number, seed: number): Job => ({
      target, workload, concurrency, stop: { kind: 'count', uploads }, honorRetryAfter: true, seed,
    });
    await client.run(job(Math.ceil(options.uploads / 4), 1), 300_000);
    // The profile's timestamps are µs of CLOCK_MONOTONIC (V8's TimeTicks on Linux), as is process.hrtime here.
    const backends = await backendPids(options.pg, 'media_bench_profile');
    const stagesBefore = await readStages(service.origin);
    const s3Before = await s3RequestsByOperation(service.origin);
    const cpuBefore = await readCpu(service.pid);
    const switchesBefore = await readSwitches(service.pid);
    const clientBefore = await readCpu(client.pid ?? 0);
    const machineBefore = await readMachineCpu();
    const pgBefore = await sumCpu(backends);
    const perf = options.perf ? startPerf(service.pid, join(profileDir, 'perf.data')) : undefined;
    const from = Number(process.hrtime.bigint() / 1000n);
    const result = await client.run(job(options.uploads, 2), 600_000);
    const to = Number(process.hrtime.bigint() / 1000n);
    await perf?.stop();
    const cpuAfter = await readCpu(service.pid);
    const switchesAfter = await readSwitches(service.pid);
    const clientAfter = await readCpu(client.pid ?? 0);
    const machineAfter = await readMachineCpu();
    const pgAfter = await sumCpu(backends);
    const stagesAfter = await readStages(service.origin);
    const s3After = await s3RequestsByOperation(service.origin);
    await client.stop();
    await service.stop();
    // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: thread 0 is the main thread (workers write their own).
    const file = (await readdir(profileDir)).find((entry) => entry.endsWith('.cpuprofile') && entry.split('.')[4] === '0');
    if (!file) throw new Error(`no main-thread .cpuprofile in ${profileDir}`);
    const profile = JSON.parse(await readFile(join(profileDir, file), 'utf8')) as CpuProfile;
    const { byCategory, byFunction, total } = summarize(profile, from, to);
    const uploads = result.ok;
    const busy = total - (byCategory.get('idle') ?? 0);
    console.log(`\n## ${name} (${options.driver}): ${title}${concurrency === WORKLOADS[name]!.concurrency ? '' : `, run at ${concurrency} in flight`}`);
    console.log(`${uploads} uploads in ${result.seconds.toFixed(1)} s (${(uploads / result.seconds).toFixed(0)}/s); statuses ${JSON.stringify(result.statuses)}`);
    const per = (micros: number) => (micros / uploads).toFixed(0);
    console.log(
      `service process CPU per upload (/proc): ${per(cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system)} µs ` +
        `(user ${per(cpuAfter.user - cpuBefore.user)}, kernel ${per(cpuAfter.system - cpuBefore.system)})`,
    );
    console.log(
      `service threads' context switches per upload: ${((switchesAfter.voluntary - switchesBefore.voluntary) / uploads).toFixed(1)} voluntary, ` +
        `${((switchesAfter.involuntary - switchesBefore.involuntary) / uploads).toFixed(1)} involuntary`,
    );
    console.log(
      `PostgreSQL backends of the service's pool per upload: ${per(pgAfter.user + pgAfter.system - pgBefore.user - pgBefore.system)} µs ` +
        `(${backends.length} backends; the WAL writer and checkpointer not counted)`,
    );
    const machine = machineAfter - machineBefore;
    const elsewhere = machine - (cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system)
      - (pgAfter.user + pgAfter.system - pgBefore.user - pgBefore.system) - (clientAfter.user + clientAfter.system - clientBefore.user - clientBefore.system);
    console.log(
      `the whole machine's CPU per upload (/proc/stat): ${per(machine)} µs, ${(machine / 1e6 / result.seconds).toFixed(2)} of ${os.cpus().length} cores busy; ` +
        `the load client ${per(clientAfter.user + clientAfter.system - clientBefore.user - clientBefore.system)} µs, ` +
        `everything else (kernel threads, PostgreSQL's WAL writer, other processes) ${per(elsewhere)} µs`,
    );
    console.log(`main thread, sampled, busy per upload: ${(busy / uploads).toFixed(0)} µs (idle ${(((byCategory.get('idle') ?? 0) / total) * 100).toFixed(0)} % of the phase)`);
    if (options.driver === 's3') {
      const sent = [...s3After].map(([operation, count]) => [operation, count - (s3Before.get(operation) ?? 0)] as const).filter(([, count]) => count > 0);
      const total = sent.reduce((sum, [, count]) => sum + count, 0);
      console.log(`S3 requests per 1,000 uploads (media_s3_requests_total): ${((total / uploads) * 1000).toFixed(0)}${sent.length ? ` (${sent.map(([operation, count]) => `${operation} ${count}`).join(', ')})` : ''}`);
    }
    console.log(`mean ms per upload by stage (media_upload_stage_seconds): ${STAGES.map((stage) => `${stage} ${meanMs(stagesBefore, stagesAfter, stage)}`).join(', ')}\n`);
    console.log('| where | µs per upload | share of busy |\n|---|---:|---:|');
    for (const [category, micros] of [...byCategory].sort((a, b) => b[1] - a[1])) {
      if (category === 'idle') continue;
      console.log(`| ${category} | ${(micros / uploads).toFixed(1)} | ${((micros / busy) * 100).toFixed(1)} % |`);
    }
    console.log('\nTop functions by self time (µs per upload):');
    for (const [label, micros] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 30)) {
      if (label.startsWith('(idle)')) continue;
      console.log(`  ${(micros / uploads).toFixed(1).padStart(7)}  ${label}`);
    }
    console.log(`\nprofile: ${join(profileDir, file)}`);
    if (perf) console.log(`\n${await perf.report(uploads)}`);
  } finally {
    await client.stop().catch(() => undefined);
    await service.stop().catch(() => undefined);
    await rm(dataDir, { recursive: true, force: true });
    if (s3) await emptyPrefix(s3.client, s3.settings.bucket, s3KeyPrefix).catch(() => undefined);
    await dropDatabase(options.pg, 'media_bench_profile').catch(() => undefined);
  }
}

async function openBucket() {
  const wanted = s3Settings();
  const client = s3Client(wanted);
  return { client, settings: await ensureBucket(client, wanted) };
}

const STAGES = ['queue', 'receive', 'store', 'commit'] as const;
type StageSums = Map<string, { sum: number; count: number }>;

/** The service's media_upload_stage_seconds sums and counts, from /metrics (open to loopback). */
async function readStages(origin: string): Promise<StageSums> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  const stages: StageSums = new Map();
  for (const match of text.matchAll(/^media_upload_stage_seconds_(sum|count)\{stage="(\w+)"\} (\S+)$/gm)) {
    const entry = stages.get(match[2]!) ?? { sum: 0, count: 0 };
    entry[match[1] as 'sum' | 'count'] = Number(match[3]);
    stages.set(match[2]!, entry);
  }
  return stages;
}

function meanMs(before: StageSums, after: StageSums, stage: string): string {
  const a = after.get(stage);
  const b = before.get(stage) ?? { sum: 0, count: 0 };
  if (!a || a.count === b.count) return '-';
  return (((a.sum - b.sum) / (a.count - b.count)) * 1000).toFixed(2);
}

interface Cpu {
  user: number;
  system: number;
}

/** A process's CPU time in µs (all threads), from /proc; zero once it is gone. */
async function readCpu(pid: number): Promise<Cpu> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  if (!stat) return { user: 0, system: 0 };
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: (Number(fields[11]) * 1e6) / 100, system: (Number(fields[12]) * 1e6) / 100 };
}

/** CPU time in µs spent by the whole machine, every CPU, from the first line of /proc/stat (idle, iowait and steal not counted). */
async function readMachineCpu(): Promise<number> {
  const [user, nice, system, , , irq, softirq] = (await readFile('/proc/stat', 'utf8')).split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return ((user! + nice! + system! + irq! + softirq!) * 1e6) / 100;
}

/**
 * The context switches of all the process's threads, from /proc. Each hop to the libuv thread pool
 * and back costs about two, and on a virtual machine a switch that wakes another CPU is dear.
 */
async function readSwitches(pid: number): Promise<{ voluntary: number; involuntary: number }> {
  const total = { voluntary: 0, involuntary: 0 };
  const threads = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
  for (const thread of threads) {
    const status = await readFile(`/proc/${pid}/task/${thread}/status`, 'utf8').catch(() => '');
    total.voluntary += Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    total.involuntary += Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
  }
  return total;
}

async function sumCpu(pids: number[]): Promise<Cpu> {
  const all = await Promise.all(pids.map(readCpu));
  return all.reduce((sum, cpu) => ({ user: sum.user + cpu.user, system: sum.system + cpu.system }), { user: 0, system: 0 });
}

/** The server processes serving connections to `database` (the service's pool, warm after the warm-up). */
async function backendPids(serverUrl: string, database: string): Promise<number[]> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [database]);
    return rows.map((row) => row.pid);
  } finally {
    await admin.end();
  }
}

/** `perf record` of one process while the measured phase runs; `report` sums samples by symbol (µs per upload at 1 kHz). */
function startPerf(pid: number, output: string) {
  const child = spawn('perf', ['record', '-q', '-e', 'cpu-clock', '-F', '1000', '-g', '-p', String(pid), '-o', output], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    async stop() {
      child.kill('SIGINT');
      await exited;
    },
    async report(uploads: number): Promise<string> {
      const report = spawnSync('perf', ['report', '-i', output, '--no-children', '--stdio', '-g', 'none', '--sort', 'dso,sym', '-F', 'period,dso,sym', '--percent-limit', '0.7'], { encoding: 'utf8', maxBuffer: 64 << 20 });
      const lines = report.stdout.split('\n').filter((line) => line.trim() && !line.startsWith('#'));
      return ['perf (cpu-clock, µs per upload, by library and symbol):', ...lines.map((line) => {
        const [period, ...rest] = line.trim().split(/\s+/);
        return `  ${((Number(period) / 1000) / uploads).toFixed(1).padStart(7)}  ${rest.join(' ')}`;
      })].join('\n');
    },
  };
}

const options = parseArgs(process.argv.slice(2));
for (const name of options.workloads) await profileWorkload(name, options);
