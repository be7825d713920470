/**
 * The upload benchmark suite (issue #5): `npm run bench [-- options]`.
 *
 *   --quick                 a one-minute subset (screenshot, log, large multipart; pool micro-benchmark)
 *   --only <a,b,...>        scenarios or groups: screenshot, screenshot-2mib, log, mixed, large (large-multipart,
 *                           large-json), memory (memory-250mb, memory-64x2mib), admission, sweep, pool,
 *                           processes (screenshot and log against HTTP_PROCESSES=1 and 2 side by side),
 *                           concurrency (screenshot, log and 2 MiB against UPLOAD_CONCURRENCY=16, 32, 64),
 *                           thread-pool (screenshot and log against UV_THREADPOOL_SIZE=4, 16, 32),
 *                           screenshot-image (real 1280x720 PNGs, which get thumbnails),
 *                           thumbnails (screenshot-image against THUMBNAIL_CONCURRENCY=0 and 1)
 *   --driver fs|s3          one storage driver only (default: both)
 *   --own-s3                start a private Ceph RGW for this run (scripts/s3-test-server.sh with
 *                           its own directory and ports: $BENCH_OWN_S3_PORT, default 7490, and
 *                           $BENCH_OWN_S3_MON_PORT, default 3390) and stop it at the end, instead
 *                           of using the shared test server (TEST_S3_* settings, as the tests)
 *   --rounds N              rounds of service/reference alternation (default 2, quick 1)
 *   --seconds S             length of each timed phase (default 3, quick 1)
 *   --pg URL                PostgreSQL server for the scratch database media_bench
 *                           (default $BENCH_PG_URL or postgres://postgres@127.0.0.1:5432/postgres)
 *   --versus DIR            also the screenshot, 2 MiB and log workloads against the service of another
 *                           checkout (DIR, with its own node_modules) and this one, started side by
 *                           side and alternating phase by phase: a change's cost measured in one run
 *   --out DIR               where results go (default bench/results)
 *   --render FILE.json      only rewrite the markdown and charts of an earlier run from its JSON
 *
 * Processes: this orchestrator; the load client (bench/lib/load-client.ts, undici); the service
 * (`node src/main.ts`); the references (bench/peers/). Every process under test is a separate
 * child process; the orchestrator samples its CPU time and RSS from /proc.
 *
 * Writes bench/results/<timestamp>.json (everything), <timestamp>.md (ready-to-paste tables) and
 * SVG charts (concurrency sweep, RSS over time).
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { LoadClient } from './lib/client-handle.ts';
import type { Job, Target } from './lib/load-client.ts';
import { MiB, KiB, type Workload } from './lib/payloads.ts';
import { idleRss, ProcessMonitor, type ProcessUsage, type RssSample } from './lib/proc.ts';
import { collectGarbage, emptyPrefix, ensureBucket, reserveSpace, s3Client, s3Settings, type S3Settings } from './lib/s3.ts';
import { repo, startNode, type Started } from './lib/servers.ts';
import { dropDatabase, resetDatabase, s3RequestsSent, settingsFromEnvironment, startService, thumbnailCatchUp, type Driver, type RunningService, type ServiceOptions } from './lib/service.ts';
import { mergePhases, summarize, type PhaseResult, type Summary } from './lib/stats.ts';
import { lineChart, type Series } from './lib/svg.ts';
import { renderMarkdown } from './lib/report.ts';
import type { PoolVsInlineResult } from './pool-vs-inline.ts';

// ---------------------------------------------------------------- options

const THROUGHPUT = ['screenshot', 'screenshot-2mib', 'log', 'mixed', 'large-multipart', 'large-json', 'screenshot-image'] as const;
const MEMORY = ['memory-250mb', 'memory-64x2mib'] as const;
const ALL = [...THROUGHPUT, ...MEMORY, 'admission', 'sweep', 'processes', 'concurrency', 'thread-pool', 'thumbnails', 'versions', 'pool'] as const;
type ScenarioName = (typeof ALL)[number];
const GROUPS: Record<string, ScenarioName[]> = {
  large: ['large-multipart', 'large-json'],
  memory: [...MEMORY],
  throughput: [...THROUGHPUT],
};
const QUICK: ScenarioName[] = ['screenshot', 'log', 'large-multipart', 'pool'];

function parseArgs(argv: string[]) {
  const options = {
    quick: false,
    only: null as ScenarioName[] | null,
    drivers: ['fs', 's3'] as Driver[],
    rounds: null as number | null,
    seconds: null as number | null,
    pg: process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    out: join(repo, 'bench', 'results'),
    ownS3: false,
    render: null as string | null,
    versus: null as string | null,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => {
      const next = argv[++i];
      if (next === undefined) throw new Error(`${arg} needs a value`);
      return next;
    };
    if (arg === '--quick') options.quick = true;
    else if (arg === '--own-s3') options.ownS3 = true;
    else if (arg === '--render') options.render = value();
    else if (arg === '--only') {
      const names: ScenarioName[] = [];
      for (const name of value().split(',').map((s) => s.trim()).filter(Boolean)) {
        if (GROUPS[name]) names.push(...GROUPS[name]);
        else if ((ALL as readonly string[]).includes(name)) names.push(name as ScenarioName);
        else throw new Error(`unknown scenario "${name}" (known: ${[...ALL, ...Object.keys(GROUPS)].join(', ')})`);
      }
      options.only = names;
    } else if (arg === '--driver') {
      const driver = value();
      if (driver !== 'fs' && driver !== 's3') throw new Error('--driver takes fs or s3');
      options.drivers = [driver];
    } else if (arg === '--rounds') options.rounds = Number(value());
    else if (arg === '--seconds') options.seconds = Number(value());
    else if (arg === '--pg') options.pg = value();
    else if (arg === '--out') options.out = value();
    else if (arg === '--versus') options.versus = value();
    else if (arg === '--help' || arg === '-h') {
      console.log('usage: npm run bench -- [--quick] [--only a,b] [--driver fs|s3] [--own-s3] [--rounds N] [--seconds S] [--pg URL] [--versus DIR] [--out DIR] | --render FILE.json');
      process.exit(0);
    } else throw new Error(`unknown option ${arg}`);
  }
  return options;
}

let options: ReturnType<typeof parseArgs>;
try {
  options = parseArgs(process.argv.slice(2));
} catch (error) {
  console.error(`bench: ${(error as Error).message}`);
  process.exit(2);
}
const selected = new Set<ScenarioName>(options.only ?? (options.quick ? QUICK : [...ALL]));
// The versions rows need the other checkout: with --versus they run whatever --only says, without it never.
if (options.versus) selected.add('versions');
else selected.delete('versions');
const rounds = options.rounds ?? (options.quick ? 1 : 2);
const phaseSeconds = options.seconds ?? (options.quick ? 1 : 3);
const settings = {
  rounds,
  phaseSeconds,
  /** 100 MiB uploads per phase of the large scenarios. */
  largeCount: { fs: 4, s3: 4 } as Record<Driver, number>,
  admissionSeconds: options.quick ? 4 : 8,
  sweepSeconds: options.quick ? 1.5 : 2.5,
  sweepLevels: [8, 32, 64, 128, 256],
  memoryWaves: options.quick ? 1 : 2,
  /** Untimed seconds of each timed scenario's own workload, per target, before its first round. */
  scenarioWarmUpSeconds: options.quick ? 0.5 : 2,
};

// ---------------------------------------------------------------- scenarios

interface ScenarioDef {
  name: (typeof THROUGHPUT)[number];
  title: string;
  workload: Workload;
  concurrency: number;
  stop: (driver: Driver) => Job['stop'];
  /** Upper estimate of the bytes one phase stores (for the S3 space guard). */
  bytes: (driver: Driver) => number;
  /** The least a phase may be bounded to by the S3 space guard; below, it is skipped. */
  minBytes: (driver: Driver) => number;
}

/** Bytes per second a phase may write to the test RGW at most (measured 75-150 MiB/s there), for the space guard. */
const RGW_MB_PER_SECOND_ESTIMATE = 150e6;
const timed = (): Job['stop'] => ({ kind: 'duration', seconds: phaseSeconds });
const SCENARIOS: ScenarioDef[] = [
  {
    name: 'screenshot',
    title: 'screenshot burst: 256 KiB multipart, 64 in flight',
    workload: { body: 'multipart', content: 'png', size: { kind: 'fixed', bytes: 256 * KiB } },
    concurrency: 64,
    stop: timed,
    bytes: () => phaseSeconds * RGW_MB_PER_SECOND_ESTIMATE,
    minBytes: () => (phaseSeconds * RGW_MB_PER_SECOND_ESTIMATE) / 4,
  },
  {
    name: 'screenshot-2mib',
    title: 'large screenshots: 2 MiB multipart, 16 in flight',
    workload: { body: 'multipart', content: 'png', size: { kind: 'fixed', bytes: 2 * MiB } },
    concurrency: 16,
    stop: timed,
    bytes: () => phaseSeconds * RGW_MB_PER_SECOND_ESTIMATE,
    minBytes: () => (phaseSeconds * RGW_MB_PER_SECOND_ESTIMATE) / 4,
  },
  {
    name: 'screenshot-image',
    title: 'screenshot burst of real PNGs (1280x720, 256 KiB) multipart, 64 in flight',
    workload: { body: 'multipart', content: 'image', size: { kind: 'fixed', bytes: 256 * KiB } },
    concurrency: 64,
    stop: timed,
    bytes: () => phaseSeconds * RGW_MB_PER_SECOND_ESTIMATE,
    minBytes: () => (phaseSeconds * RGW_MB_PER_SECOND_ESTIMATE) / 4,
  },
  {
    name: 'log',
    title: 'log stream: 8 KiB JSON (base64), 32 in flight',
    workload: { body: 'json-base64', content: 'log', size: { kind: 'fixed', bytes: 8 * KiB } },
    concurrency: 32,
    stop: timed,
    bytes: () => phaseSeconds * 40e6,
    minBytes: () => phaseSeconds * 10e6,
  },
  {
    name: 'mixed',
    title: 'mixed fleet: 90% 256 KiB-2 MiB, 10% 32 MiB multipart, 32 in flight',
    workload: { body: 'multipart', content: 'png', size: { kind: 'mixed', minBytes: 256 * KiB, maxBytes: 2 * MiB, largeBytes: 32 * MiB, largeShare: 0.1 } },
    concurrency: 32,
    stop: timed,
    bytes: () => phaseSeconds * RGW_MB_PER_SECOND_ESTIMATE + 128 * MiB,
    minBytes: () => 32 * 2 * MiB + 4 * 32 * MiB,
  },
  {
    name: 'large-multipart',
    title: 'large: 100 MiB multipart, 4 in flight',
    workload: { body: 'multipart', content: 'png', size: { kind: 'fixed', bytes: 100 * MiB } },
    concurrency: 4,
    stop: (driver) => ({ kind: 'count', uploads: settings.largeCount[driver] }),
    bytes: (driver) => settings.largeCount[driver] * 100 * MiB,
    minBytes: (driver) => settings.largeCount[driver] * 100 * MiB,
  },
  {
    name: 'large-json',
    title: 'large: 100 MiB JSON data URI, 4 in flight',
    workload: { body: 'json-datauri', content: 'png', size: { kind: 'fixed', bytes: 100 * MiB } },
    concurrency: 4,
    stop: (driver) => ({ kind: 'count', uploads: settings.largeCount[driver] }),
    bytes: (driver) => settings.largeCount[driver] * 100 * MiB,
    minBytes: (driver) => settings.largeCount[driver] * 100 * MiB,
  },
];

// ---------------------------------------------------------------- targets

type TargetId = 'service' | 'sink' | 'file' | 'direct' | 'peer';
const TARGET_LABELS: Record<TargetId, string> = {
  service: 'service',
  sink: 'HTTP sink (discard)',
  file: 'file sink (node:http → file)',
  direct: 'direct to S3 (lib-storage)',
  peer: 'Fastify peer',
};
const PEER_KEY = `peer-${randomBytes(8).toString('hex')}`;

interface DriverContext {
  driver: Driver;
  service: RunningService;
  /** Null when the sink is measured in the fs group only. */
  sink: Started | null;
  /** fs: the file sink; s3: none (the direct uploader is the load client itself). */
  fileSink: Started | null;
  peer: Started;
  dirs: { sinkFiles: string; peerFiles: string };
}

// ---------------------------------------------------------------- records

export interface PhaseRecord {
  scenario: string;
  driver: Driver;
  target: TargetId;
  round: number;
  result: PhaseResult | null;
  usage: Omit<ProcessUsage, 'series'> | null;
  /** CPU and RSS are of this process: the server, or for "direct" the uploader (load client). */
  monitored: 'server' | 'uploader';
  /** Set when the S3 space guard allowed the phase fewer bytes than it would have written. */
  boundedToBytes?: number;
  /** The service on s3: requests its driver sent to S3 during the phase (media_s3_requests_total). */
  s3Requests?: number;
  skipped?: string;
}

export interface TargetSummary {
  scenario: string;
  driver: Driver;
  target: TargetId;
  label: string;
  summary: Summary | null;
  cpuSecondsPerGB: number | null;
  peakRssMB: number | null;
  monitored: 'server' | 'uploader';
  skipped?: string;
  /** E.g. that the S3 space guard bounded some phases. */
  note?: string;
  errorSamples: string[];
}

export interface MemoryRecord {
  scenario: (typeof MEMORY)[number];
  driver: Driver;
  target: 'service' | 'peer';
  idleRssMB: number;
  peakRssMB: number;
  riseMB: number;
  summary: Summary | null;
  series: RssSample[];
  skipped?: string;
}

export interface AdmissionRecord {
  driver: Driver;
  target: 'service' | 'peer';
  concurrency: number;
  summary: Summary | null;
  peakRssMB: number | null;
  skipped?: string;
}

export interface SweepRecord {
  driver: Driver;
  concurrency: number;
  summary: Summary | null;
  peakRssMB: number | null;
  skipped?: string;
}

/** A workload against the service started with one value of a setting (see COMPARISONS). */
export interface ScalingRecord {
  driver: Driver;
  scenario: 'screenshot' | 'log' | 'screenshot-2mib' | 'screenshot-image';
  /** The setting compared and its value; absent in reports written before other settings than HTTP_PROCESSES were compared. */
  setting?: string;
  value?: string;
  /** HTTP_PROCESSES of the row, when that is the setting compared. */
  processes?: number;
  summary: Summary | null;
  /** CPU seconds of the service's whole process tree per second of the phases: the cores it kept busy. */
  coresBusy: number | null;
  peakRssMB: number | null;
  skipped?: string;
}

export interface BenchReport {
  startedAt: string;
  finishedAt: string;
  seconds: number;
  argv: string[];
  settings: typeof settings & { scenarios: string[]; drivers: Driver[]; quick: boolean };
  machine: {
    cpu: string;
    cores: number;
    ramGiB: number;
    node: string;
    kernel: string;
    loadAverageStart: number[];
    loadAverageEnd: number[];
    commit: string;
  };
  serviceSettings: Record<string, string>;
  notes: string[];
  throughput: TargetSummary[];
  phases: PhaseRecord[];
  rssSeries: { driver: Driver; scenario: string; target: TargetId; series: RssSample[] }[];
  memory: MemoryRecord[];
  admission: AdmissionRecord[];
  sweep: SweepRecord[];
  /** Absent in reports written before the processes scenario existed. */
  scaling?: ScalingRecord[];
  pool: PoolVsInlineResult | null;
  /** Warnings and errors the processes under test logged (pino level >= warn, or anything on stderr). */
  processLogs: { process: string; count: number; first: string[] }[];
  files: { markdown: string; json: string; charts: string[] };
}

// ---------------------------------------------------------------- run state

const startedAt = new Date();
const stamp = startedAt.toISOString().replace(/[:]/g, '-').replace(/\..+$/, 'Z');
const workDir = join(os.tmpdir(), 'media-bench');
const dbName = 'media_bench';
const runPrefix = `run-${stamp.toLowerCase().replace(/[^a-z0-9-]/g, '-')}/`;
const authSecret = randomBytes(24).toString('hex');
const notes: string[] = [];
const overridden = Object.entries(settingsFromEnvironment());
if (overridden.length > 0) notes.push(`the service ran with ${overridden.map(([name, value]) => `${name}=${value}`).join(', ')} (BENCH_SERVICE_* in the environment), not its default`);
const phases: PhaseRecord[] = [];
const rssSeries: BenchReport['rssSeries'] = [];
const memory: MemoryRecord[] = [];
const admission: AdmissionRecord[] = [];
const sweep: SweepRecord[] = [];
const scaling: ScalingRecord[] = [];
let pool: PoolVsInlineResult | null = null;
const processLogs: BenchReport['processLogs'] = [];
const client = new LoadClient();
let s3: { settings: S3Settings; client: S3Client } | null = null;
let databaseUrl = '';
const live = new Set<Started>();

function log(message: string): void {
  const elapsed = ((Date.now() - startedAt.getTime()) / 1000).toFixed(0).padStart(4);
  process.stderr.write(`[bench ${elapsed}s] ${message}\n`);
}

const MB = (bytes: number) => bytes / 1e6;

async function emptyDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const entry of await readdir(dir)) await rm(join(dir, entry), { recursive: true, force: true });
}

/**
 * Takes what a target stored out of its way by renaming its directory into the trash (and making
 * it again, empty), instead of deleting it: ext4 without a journal (this machine's disk) skips
 * inodes freed in the last seconds when it allocates new ones (`recently_deleted()`), so deleting
 * thousands of files between phases made every file creation of the next phase scan past them
 * (measured: ~450 µs of kernel time per upload), for whichever target came next. The trash is
 * deleted when a scenario's rounds end, before the next scenario's warm-up: kept for a whole
 * driver's group it outgrew the 40 GB bench file system (the fs group stores about 34 GB).
 */
let trashed = 0;
async function moveAside(dir: string): Promise<void> {
  const trash = join(workDir, 'trash');
  await mkdir(trash, { recursive: true });
  try {
    await rename(dir, join(trash, String(trashed++)));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(dir, { recursive: true });
}

async function emptyTrash(): Promise<void> {
  await rm(join(workDir, 'trash'), { recursive: true, force: true });
}

function servicePrefix(): string {
  return `${runPrefix}service/`;
}

function targetFor(ctx: DriverContext, id: TargetId): Target {
  const http = (origin: string, teamId: string, apiKey: string): Target => ({ kind: 'http', origin, teamId, apiKey });
  switch (id) {
    case 'service':
      return http(ctx.service.origin, ctx.service.teamId, ctx.service.apiKey);
    case 'sink':
      return http(ctx.sink!.origin, 'bench', 'none');
    case 'file':
      return http(ctx.fileSink!.origin, 'bench', 'none');
    case 'peer':
      return http(ctx.peer.origin, 'bench', PEER_KEY);
    case 'direct':
      return { kind: 's3', ...s3!.settings, keyPrefix: runPrefix };
  }
}

function monitoredPid(ctx: DriverContext, id: TargetId): number {
  switch (id) {
    case 'service':
      return ctx.service.pid;
    case 'sink':
      return ctx.sink!.pid;
    case 'file':
      return ctx.fileSink!.pid;
    case 'peer':
      return ctx.peer.pid;
    case 'direct':
      return client.pid!;
  }
}

/** Deletes what a target stored. */
async function cleanTarget(ctx: DriverContext, id: TargetId): Promise<void> {
  if (id === 'sink') return;
  if (ctx.driver === 'fs') {
    if (id === 'service') await moveAside(join(ctx.service.dataDir, 'files', 'media'));
    else if (id === 'file') await moveAside(ctx.dirs.sinkFiles);
    else if (id === 'peer') await moveAside(ctx.dirs.peerFiles);
    return;
  }
  const prefix = id === 'service' ? servicePrefix() : id === 'peer' ? `${runPrefix}peer/` : `${runPrefix}direct/`;
  await emptyPrefix(s3!.client, s3!.settings.bucket, prefix);
}

/** Once a phase was skipped for want of room, later phases wait less for it. */
let s3Tight = false;

/**
 * For phases that write to S3: the bytes the phase may write (see lib/s3.ts reserveSpace), or the
 * reason to skip it. Infinity for phases that do not write to S3.
 */
async function s3Room(ctx: DriverContext | Driver, id: TargetId, bytes: number, minBytes: number): Promise<{ maxBytes: number; skip: string | null }> {
  const driver = typeof ctx === 'string' ? ctx : ctx.driver;
  if (driver !== 's3' || id === 'sink') return { maxBytes: Infinity, skip: null };
  let { allowed, space, broken } = await reserveSpace(bytes, minBytes, s3Tight ? 0 : 10_000);
  if (broken && ownS3Started) {
    log('the private S3 cluster counts its used bytes below zero and hangs every write: rebuilding it');
    await keepOwnS3Usable('s3');
    ({ allowed, space, broken } = await reserveSpace(bytes, minBytes, 0));
  }
  if (broken) return { maxBytes: 0, skip: 'skipped: the S3 test cluster counts its used bytes below zero (it hangs writes)' };
  if (allowed > 0) return { maxBytes: allowed, skip: null };
  s3Tight = true;
  const used = space ? ` (${(space.used / 2 ** 30).toFixed(2)} of ${(space.total / 2 ** 30).toFixed(2)} GiB used)` : '';
  return { maxBytes: 0, skip: `skipped: no room on the S3 test server${used}` };
}

function jobTimeoutMs(job: Job, bytes: number): number {
  const base = job.stop.kind === 'duration' ? job.stop.seconds * 1000 : 0;
  return base + (bytes / 20e6) * 1000 + 120_000;
}

/**
 * One phase: one target, one workload, CPU and RSS of the process under test around it, then its
 * storage emptied. `bytes` is an upper estimate of what the phase stores; on S3 the phase is
 * bounded to what fits (at least `minBytes`, default a quarter of `bytes`, or it is skipped).
 */
async function runPhase(
  ctx: DriverContext,
  scenario: string,
  id: TargetId,
  round: number,
  baseJob: Omit<Job, 'target'>,
  bytes: number,
  minBytes = bytes / 4,
): Promise<{ record: PhaseRecord; series: RssSample[] }> {
  const monitored = id === 'direct' ? 'uploader' : 'server';
  const { maxBytes, skip } = await s3Room(ctx, id, bytes, minBytes);
  const job: Omit<Job, 'target'> = Number.isFinite(maxBytes) ? { ...baseJob, maxBytes } : baseJob;
  if (skip) {
    log(`${scenario} ${ctx.driver} ${id}: ${skip}`);
    const record: PhaseRecord = { scenario, driver: ctx.driver, target: id, round, result: null, usage: null, monitored, skipped: skip };
    return { record, series: [] };
  }
  const countsS3Requests = ctx.driver === 's3' && id === 'service';
  const s3RequestsBefore = countsS3Requests ? await s3RequestsSent(ctx.service.origin) : 0;
  const monitor = new ProcessMonitor(monitoredPid(ctx, id));
  monitor.start();
  let result: PhaseResult | null = null;
  let failure: string | undefined;
  try {
    result = await client.run({ ...job, target: targetFor(ctx, id) }, jobTimeoutMs({ ...job, target: targetFor(ctx, id) }, bytes));
  } catch (error) {
    failure = `failed: ${(error as Error).message.split('\n')[0]}`;
  }
  const usage = monitor.stop();
  const s3Requests = countsS3Requests ? (await s3RequestsSent(ctx.service.origin)) - s3RequestsBefore : undefined;
  await cleanTarget(ctx, id).catch((error: unknown) => log(`clean-up of ${id} failed: ${String(error)}`));
  const { series, ...rest } = usage;
  const record: PhaseRecord = {
    scenario,
    driver: ctx.driver,
    target: id,
    round,
    result,
    usage: rest,
    monitored,
    ...(result?.stoppedByMaxBytes ? { boundedToBytes: maxBytes } : {}),
    ...(s3Requests === undefined ? {} : { s3Requests }),
    ...(failure ? { skipped: failure } : {}),
  };
  if (result) {
    const s = summarize(result);
    const errors = Object.entries(s.errors).map(([k, v]) => `${k}×${v}`).join(' ');
    log(
      `${scenario} ${ctx.driver} ${id.padEnd(7)} r${round}: ${s.uploadsPerSecond.toFixed(1)} uploads/s, ${s.mbPerSecond.toFixed(1)} MB/s, ` +
        `p50 ${s.p50.toFixed(0)} p99 ${s.p99.toFixed(0)} ms, cpu ${rest.cpuSeconds.toFixed(1)} s, peak RSS ${MB(rest.peakRss).toFixed(0)} MB` +
        `${s3Requests === undefined || result.ok === 0 ? '' : `, ${((s3Requests / result.ok) * 1000).toFixed(0)} S3 requests per 1,000 uploads`}${errors ? `, errors ${errors}` : ''}`,
    );
  } else log(`${scenario} ${ctx.driver} ${id}: ${failure}`);
  return { record, series };
}

/**
 * The targets of a driver's throughput phases. The HTTP sink does not depend on the driver: it is
 * measured in the fs group and its numbers serve both, unless only s3 runs.
 */
function targetsOf(driver: Driver): TargetId[] {
  if (driver === 'fs') return ['service', 'sink', 'file', 'peer'];
  return options.drivers.includes('fs') ? ['service', 'direct', 'peer'] : ['service', 'sink', 'direct', 'peer'];
}

// ---------------------------------------------------------------- driver groups

/** The Fastify peer's environment: its key and, on s3, the same bucket and run prefix as the service. */
function peerEnvOf(driver: Driver): Record<string, string> {
  if (driver !== 's3') return { BENCH_PEER_KEY: PEER_KEY };
  return {
    BENCH_PEER_KEY: PEER_KEY,
    S3_ENDPOINT: s3!.settings.endpoint,
    S3_REGION: s3!.settings.region,
    S3_BUCKET: s3!.settings.bucket,
    S3_ACCESS_KEY_ID: s3!.settings.accessKeyId,
    S3_SECRET_ACCESS_KEY: s3!.settings.secretAccessKey,
    S3_KEY_PREFIX: runPrefix,
  };
}

async function startDriver(driver: Driver): Promise<DriverContext> {
  const base = join(workDir, driver);
  const dirs = { sinkFiles: join(base, 'sink-files'), peerFiles: join(base, 'peer-files') };
  await mkdir(dirs.sinkFiles, { recursive: true });
  await mkdir(dirs.peerFiles, { recursive: true });
  const track = <T extends Started>(started: T): T => {
    live.add(started);
    return started;
  };
  const [service, sink, fileSink, peer] = await Promise.all([
    startFreshService(driver).then(track),
    targetsOf(driver).includes('sink') ? startNode('sink', ['bench/peers/sink-server.ts', 'discard'], {}).then(track) : Promise.resolve(null),
    driver === 'fs' ? startNode('file-sink', ['bench/peers/sink-server.ts', 'file', dirs.sinkFiles], {}).then(track) : Promise.resolve(null),
    startNode(`peer-${driver}`, ['bench/peers/fastify-peer.ts', driver, ...(driver === 'fs' ? [dirs.peerFiles] : [])], peerEnvOf(driver)).then(track),
  ]);
  return { driver, service, sink, fileSink, peer, dirs };
}

async function startFreshService(driver: Driver): Promise<RunningService> {
  const dataDir = join(workDir, driver, 'service');
  await rm(dataDir, { recursive: true, force: true });
  return startService({ driver, databaseUrl, dataDir, s3: s3?.settings ?? null, s3KeyPrefix: servicePrefix(), authSecret });
}

/** Stops a process under test and keeps what it logged at warn or above. */
async function stopProcess(started: Started, label: string): Promise<void> {
  await started.stop();
  live.delete(started);
  if (started.problems.count > 0) {
    processLogs.push({ process: label, count: started.problems.count, first: started.problems.first });
    log(`${label} logged ${started.problems.count} warning(s)/error(s); first: ${started.problems.first[0]}`);
  }
}

async function stopDriver(ctx: DriverContext): Promise<void> {
  await emptyTrash();
  for (const started of [ctx.service, ctx.sink, ctx.fileSink, ctx.peer]) {
    if (started) await stopProcess(started, `${started.name} (${ctx.driver} group)`);
  }
}

async function warmUp(ctx: DriverContext, targets: TargetId[] = targetsOf(ctx.driver)): Promise<void> {
  const job: Omit<Job, 'target'> = {
    workload: { body: 'multipart', content: 'png', size: { kind: 'fixed', bytes: 64 * KiB } },
    concurrency: 8,
    stop: { kind: 'duration', seconds: options.quick ? 0.5 : 1 },
    honorRetryAfter: false,
    seed: 1,
  };
  for (const id of targets) {
    try {
      const { maxBytes, skip } = await s3Room(ctx, id, 64e6, 16e6);
      if (skip) continue;
      await client.run({ ...job, ...(Number.isFinite(maxBytes) ? { maxBytes } : {}), target: targetFor(ctx, id) }, 60_000);
      await cleanTarget(ctx, id);
    } catch (error) {
      log(`warm-up of ${id} failed: ${(error as Error).message}`);
    }
  }
}

/**
 * Every target runs the scenario's own workload, untimed, before its timed phases: the JIT has
 * then compiled the paths this workload takes in each process (the generic warm-up sends only
 * 64 KiB multipart), so the rounds compare steady states, as a long-running service sees them.
 */
async function warmUpScenario(ctx: DriverContext, scenario: ScenarioDef): Promise<void> {
  for (const id of targetsOf(ctx.driver)) {
    const { maxBytes, skip } = await s3Room(ctx, id, scenario.bytes(ctx.driver), scenario.minBytes(ctx.driver));
    if (skip) continue;
    const job: Job = {
      target: targetFor(ctx, id),
      workload: scenario.workload,
      concurrency: scenario.concurrency,
      stop: { kind: 'duration', seconds: settings.scenarioWarmUpSeconds },
      honorRetryAfter: true,
      seed: 100,
      ...(Number.isFinite(maxBytes) ? { maxBytes } : {}),
    };
    try {
      await client.run(job, 120_000);
    } catch (error) {
      log(`warm-up of ${id} for ${scenario.name} failed: ${(error as Error).message}`);
    }
    await cleanTarget(ctx, id);
  }
}

async function throughputScenarios(ctx: DriverContext): Promise<void> {
  for (const scenario of SCENARIOS) {
    if (!selected.has(scenario.name)) continue;
    log(`${scenario.name} (${ctx.driver}): ${scenario.title}, ${rounds} round(s)`);
    if (scenario.stop(ctx.driver).kind === 'duration') await warmUpScenario(ctx, scenario);
    for (let round = 1; round <= rounds; round++) {
      // The order turns around every round, as in the comparisons: with the service always first, it
      // always followed the peer's phase of the round before, and its screenshot row measured 0.6x-0.8x
      // of what the same run's comparisons measured for the same service and workload.
      const targets = round % 2 === 1 ? targetsOf(ctx.driver) : [...targetsOf(ctx.driver)].reverse();
      for (const id of targets) {
        const job: Omit<Job, 'target'> = {
          workload: scenario.workload,
          concurrency: scenario.concurrency,
          stop: scenario.stop(ctx.driver),
          honorRetryAfter: false,
          seed: round,
        };
        const { record, series } = await runPhase(ctx, scenario.name, id, round, job, scenario.bytes(ctx.driver), scenario.minBytes(ctx.driver));
        phases.push(record);
        if (scenario.name.startsWith('large') && round === 1 && (id === 'service' || id === 'peer') && series.length > 0) {
          rssSeries.push({ driver: ctx.driver, scenario: scenario.name, target: id, series });
        }
      }
    }
    await emptyTrash();
  }
}

async function admissionScenarios(ctx: DriverContext): Promise<void> {
  if (selected.has('admission')) {
    log(`admission (${ctx.driver}): 256 in flight of 2 MiB for ${settings.admissionSeconds} s, clients honour Retry-After`);
    for (const id of ['service', 'peer'] as const) {
      const job: Omit<Job, 'target'> = {
        workload: { body: 'multipart', content: 'png', size: { kind: 'fixed', bytes: 2 * MiB } },
        concurrency: 256,
        stop: { kind: 'duration', seconds: settings.admissionSeconds },
        honorRetryAfter: true,
        seed: 7,
      };
      const { record } = await runPhase(ctx, 'admission', id, 1, job, settings.admissionSeconds * RGW_MB_PER_SECOND_ESTIMATE + 80 * 2 * MiB);
      phases.push(record);
      admission.push({
        driver: ctx.driver,
        target: id,
        concurrency: 256,
        summary: record.result ? summarize(record.result) : null,
        peakRssMB: record.usage ? MB(record.usage.peakRss) : null,
        ...(record.skipped ? { skipped: record.skipped } : {}),
      });
    }
    await emptyTrash();
  }
  if (selected.has('sweep')) {
    log(`sweep (${ctx.driver}): 256 KiB multipart at ${settings.sweepLevels.join(', ')} in flight, ${settings.sweepSeconds} s each`);
    for (const concurrency of settings.sweepLevels) {
      const job: Omit<Job, 'target'> = {
        workload: { body: 'multipart', content: 'png', size: { kind: 'fixed', bytes: 256 * KiB } },
        concurrency,
        stop: { kind: 'duration', seconds: settings.sweepSeconds },
        honorRetryAfter: true,
        seed: 11,
      };
      const { record } = await runPhase(ctx, `sweep-${concurrency}`, 'service', 1, job, settings.sweepSeconds * RGW_MB_PER_SECOND_ESTIMATE);
      phases.push(record);
      sweep.push({
        driver: ctx.driver,
        concurrency,
        summary: record.result ? summarize(record.result) : null,
        peakRssMB: record.usage ? MB(record.usage.peakRss) : null,
        ...(record.skipped ? { skipped: record.skipped } : {}),
      });
    }
    await emptyTrash();
  }
}

/**
 * After a burst with thumbnails on: how many of its images were left pending and how long they
 * took to be made (the thumbnails-off service's images are claimed too, and fail at once: its
 * files are in another data directory or key prefix; they are not counted).
 */
async function noteThumbnailCatchUp(driver: Driver, round: number, value: string, teamId: string): Promise<void> {
  const { pending, seconds } = await thumbnailCatchUp(databaseUrl, teamId);
  const rate = seconds && seconds > 0 ? `, ${(pending / seconds).toFixed(1)}/s` : '';
  notes.push(`thumbnails catch-up (${driver}, THUMBNAIL_CONCURRENCY=${value}, round ${round}): ${pending} pending when the burst ended, ` +
    (seconds === null ? 'not all made within 5 minutes' : `all made ${seconds.toFixed(1)} s later${rate}`));
}

/** A comparison of service settings: the same workloads against one service per setting, side by side. */
interface SettingsComparison {
  name: 'processes' | 'concurrency' | 'thread-pool' | 'thumbnails' | 'versions';
  /** The variable compared; the first value is the baseline of the "vs" column. */
  setting: string;
  values: string[];
  workloads: ScalingRecord['scenario'][];
  /** How a value changes the service's start; by default it is the setting's value in the environment. */
  start?: (value: string) => Partial<ServiceOptions>;
}

const COMPARISONS: SettingsComparison[] = [
  { name: 'processes', setting: 'HTTP_PROCESSES', values: ['1', '2'], workloads: ['screenshot', 'log'] },
  // Small uploads spend most of their life waiting on fsyncs and the commit, so the number running
  // at once bounds their throughput.
  { name: 'concurrency', setting: 'UPLOAD_CONCURRENCY', values: ['16', '32', '64'], workloads: ['screenshot', 'log', 'screenshot-2mib'] },
  // Node's default (4) against the service's (16): fsyncs hold a libuv thread each.
  { name: 'thread-pool', setting: 'UV_THREADPOOL_SIZE', values: ['4', '16', '32'], workloads: ['screenshot', 'log'] },
  // Thumbnails off (0) and on (1): a burst of real images while thumbnails are made in the background.
  { name: 'thumbnails', setting: 'THUMBNAIL_CONCURRENCY', values: ['0', '1'], workloads: ['screenshot-image'] },
  // --versus DIR: another checkout's service against this one's, on the same database and storage.
  {
    name: 'versions', setting: 'version', values: ['versus', 'this'], workloads: ['screenshot', 'screenshot-2mib', 'log'],
    start: (value) => (value === 'versus' ? { checkout: options.versus! } : {}),
  },
];

/**
 * The settings rows: workloads against services started side by side, one per value of the
 * setting (see COMPARISONS), alternating phase by phase so that drift in the machine's load hits
 * all alike. CPU and RSS are of each service's whole process tree.
 */
async function settingsScenario(driver: Driver, comparison: SettingsComparison): Promise<void> {
  const workloads = SCENARIOS.filter((scenario): scenario is ScenarioDef & { name: ScalingRecord['scenario'] } =>
    (comparison.workloads as string[]).includes(scenario.name));
  log(`${comparison.name} (${driver}): ${workloads.map((w) => w.title).join('; ')}, at ${comparison.setting}=${comparison.values.join(', ')}, ${rounds} round(s)`);
  const services = new Map<string, RunningService>();
  try {
    for (const value of comparison.values) {
      const dataDir = join(workDir, driver, `service-${comparison.name}-${value}`);
      await rm(dataDir, { recursive: true, force: true });
      const service = await startService(
        {
          driver, databaseUrl, dataDir, s3: s3?.settings ?? null, s3KeyPrefix: servicePrefix(), authSecret,
          ...(comparison.start ? comparison.start(value) : { extra: { [comparison.setting]: value } }),
        },
        `service-${driver}-${comparison.name}-${value}`,
      );
      live.add(service);
      services.set(value, service);
    }
    // Only the service target runs here: a context per service, without references.
    const contexts = new Map([...services].map(([value, service]) => [value, { driver, service, sink: null, fileSink: null, peer: service, dirs: { sinkFiles: '', peerFiles: '' } }]));
    for (const ctx of contexts.values()) await warmUp(ctx, ['service']);
    const records: { scenario: ScalingRecord['scenario']; value: string; record: PhaseRecord }[] = [];
    for (let round = 1; round <= rounds; round++) {
      for (const scenario of workloads) {
        // The order turns around every round: a phase right after another workload's phases ran
        // measurably slower (the 2 MiB row, which these settings cannot change, moved by 0.7x-1.8x).
        const ordered = round % 2 === 1 ? [...contexts] : [...contexts].reverse();
        for (const [value, ctx] of ordered) {
          const job: Omit<Job, 'target'> = { workload: scenario.workload, concurrency: scenario.concurrency, stop: scenario.stop(driver), honorRetryAfter: false, seed: round };
          const { record } = await runPhase(ctx, `${scenario.name}-${comparison.name}-${value}`, 'service', round, job, scenario.bytes(driver), scenario.minBytes(driver));
          phases.push(record);
          records.push({ scenario: scenario.name, value, record });
          if (comparison.name === 'thumbnails' && value !== '0') await noteThumbnailCatchUp(driver, round, value, ctx.service.teamId);
        }
      }
    }
    for (const scenario of workloads) {
      for (const value of comparison.values) {
        const mine = records.filter((r) => r.scenario === scenario.name && r.value === value).map((r) => r.record);
        const done = mine.filter((p) => p.result);
        const merged = done.length > 0 ? mergePhases(done.map((p) => p.result!)) : null;
        const cpu = done.reduce((sum, p) => sum + (p.usage?.cpuSeconds ?? 0), 0);
        const skipped = mine.find((p) => p.skipped)?.skipped;
        scaling.push({
          driver,
          scenario: scenario.name,
          setting: comparison.setting,
          value,
          ...(comparison.setting === 'HTTP_PROCESSES' ? { processes: Number(value) } : {}),
          summary: merged ? summarize(merged) : null,
          coresBusy: merged && merged.seconds > 0 ? cpu / merged.seconds : null,
          peakRssMB: done.length > 0 ? MB(Math.max(...done.map((p) => p.usage?.peakRss ?? 0))) : null,
          ...(skipped ? { skipped } : {}),
        });
      }
    }
  } catch (error) {
    notes.push(`${comparison.name} (${driver}): ${(error as Error).message.split('\n')[0]}`);
    log(`${comparison.name} (${driver}) failed: ${(error as Error).stack}`);
  } finally {
    for (const [value, service] of services) await stopProcess(service, `${service.name} (${comparison.setting}=${value})`);
    await emptyTrash();
  }
}

/** The memory rows: each on a freshly started process, against its idle RSS. */
async function memoryScenarios(driver: Driver): Promise<void> {
  const peerDir = join(workDir, driver, 'peer-memory');
  for (const scenario of MEMORY) {
    if (!selected.has(scenario)) continue;
    const job: Omit<Job, 'target'> =
      scenario === 'memory-250mb'
        ? {
            workload: { body: 'multipart', content: 'png', size: { kind: 'fixed', bytes: 250_000_000 } },
            concurrency: 1,
            stop: { kind: 'count', uploads: 1 },
            honorRetryAfter: false,
            seed: 3,
          }
        : {
            workload: { body: 'multipart', content: 'png', size: { kind: 'fixed', bytes: 2 * MiB } },
            concurrency: 64,
            stop: { kind: 'count', uploads: 64 * settings.memoryWaves },
            honorRetryAfter: false,
            seed: 5,
          };
    const bytes = scenario === 'memory-250mb' ? 250_000_000 : 64 * settings.memoryWaves * 2 * MiB;
    for (const target of ['service', 'peer'] as const) {
      log(`${scenario} (${driver}, ${target}): ${scenario === 'memory-250mb' ? 'one 250 MB multipart upload' : `64 in flight of 2 MiB, ${64 * settings.memoryWaves} uploads`}`);
      if (driver === 's3') {
        const { skip } = await s3Room(driver, 'service', bytes, bytes);
        if (skip) {
          const skipped = skip;
          memory.push({ scenario, driver, target, idleRssMB: 0, peakRssMB: 0, riseMB: 0, summary: null, series: [], skipped });
          continue;
        }
      }
      let started: Started | null = null;
      try {
        if (target === 'service') started = await startFreshService(driver);
        else {
          await emptyDir(peerDir);
          started = await startNode(`peer-${driver}`, ['bench/peers/fastify-peer.ts', driver, ...(driver === 'fs' ? [peerDir] : [])], peerEnvOf(driver));
        }
        live.add(started);
        const targetSpec: Target =
          target === 'service'
            ? { kind: 'http', origin: started.origin, teamId: (started as RunningService).teamId, apiKey: (started as RunningService).apiKey }
            : { kind: 'http', origin: started.origin, teamId: 'bench', apiKey: PEER_KEY };
        await sleep(1000);
        const idle = await idleRss(started.pid, 1500);
        const monitor = new ProcessMonitor(started.pid);
        monitor.start();
        let result: PhaseResult | null = null;
        let skipped: string | undefined;
        try {
          result = await client.run({ ...job, target: targetSpec }, jobTimeoutMs({ ...job, target: targetSpec }, bytes));
        } catch (error) {
          skipped = `failed: ${(error as Error).message.split('\n')[0]}`;
        }
        const usage = monitor.stop();
        const record: MemoryRecord = {
          scenario,
          driver,
          target,
          idleRssMB: MB(idle),
          peakRssMB: MB(usage.peakRss),
          riseMB: MB(usage.peakRss - idle),
          summary: result ? summarize(result) : null,
          series: usage.series,
          ...(skipped ? { skipped } : {}),
        };
        memory.push(record);
        const errors = record.summary ? Object.entries(record.summary.errors).map(([k, v]) => `${k}×${v}`).join(' ') : '';
        log(`  idle ${record.idleRssMB.toFixed(0)} MB, peak ${record.peakRssMB.toFixed(0)} MB, rise ${record.riseMB.toFixed(0)} MB${errors ? `, errors ${errors}` : ''}${skipped ? `, ${skipped}` : ''}`);
      } catch (error) {
        memory.push({ scenario, driver, target, idleRssMB: 0, peakRssMB: 0, riseMB: 0, summary: null, series: [], skipped: `failed: ${(error as Error).message.split('\n')[0]}` });
        log(`  failed: ${(error as Error).message}`);
      } finally {
        if (started) await stopProcess(started, `${started.name} (${scenario})`);
        if (driver === 'fs') {
          await rm(join(workDir, driver, 'service', 'files', 'media'), { recursive: true, force: true });
          await emptyDir(peerDir);
        } else {
          await emptyPrefix(s3!.client, s3!.settings.bucket, runPrefix).catch(() => undefined);
        }
      }
    }
  }
}

// ---------------------------------------------------------------- pool micro-benchmark

async function poolVsInline(): Promise<PoolVsInlineResult | null> {
  log('pool vs inline: hashing + sniffing of 8 KiB, 256 KiB and 32 MiB bodies');
  const args = ['bench/pool-vs-inline.ts', '--json', ...(options.quick ? ['--quick'] : [])];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: repo, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk));
    child.once('exit', (code) => {
      try {
        if (code !== 0) throw new Error(`exit ${code}`);
        const result = JSON.parse(out.trim().split('\n').pop()!) as PoolVsInlineResult;
        for (const winner of result.winners) log(`  ${winner.size >= MiB ? `${winner.size / MiB} MiB` : `${winner.size / KiB} KiB`}: ${winner.winner} wins (${winner.byThroughput})`);
        resolve(result);
      } catch (error) {
        notes.push(`pool-vs-inline failed: ${String(error)}`);
        resolve(null);
      }
    });
  });
}

// ---------------------------------------------------------------- summaries and output

function summarizeThroughput(): TargetSummary[] {
  const rows: TargetSummary[] = [];
  for (const driver of options.drivers) {
    for (const scenario of SCENARIOS) {
      for (const target of targetsOf(driver)) {
        const mine = phases.filter((p) => p.scenario === scenario.name && p.driver === driver && p.target === target);
        if (mine.length === 0) continue;
        const done = mine.filter((p) => p.result);
        const merged = done.length > 0 ? mergePhases(done.map((p) => p.result!)) : null;
        const cpu = done.reduce((sum, p) => sum + (p.usage?.cpuSeconds ?? 0), 0);
        const peak = done.length > 0 ? Math.max(...done.map((p) => p.usage?.peakRss ?? 0)) : null;
        const skipped = mine.find((p) => p.skipped)?.skipped;
        const bounded = mine.filter((p) => p.boundedToBytes !== undefined);
        const note = bounded.length
          ? `${bounded.length} of ${mine.length} phase(s) bounded by the S3 space guard to ${bounded.map((p) => `${MB(p.boundedToBytes!).toFixed(0)} MB`).join(', ')}`
          : undefined;
        rows.push({
          scenario: scenario.name,
          driver,
          target,
          label: TARGET_LABELS[target],
          summary: merged ? summarize(merged) : null,
          cpuSecondsPerGB: merged && merged.okBytes > 0 ? cpu / (merged.okBytes / 1e9) : null,
          peakRssMB: peak === null ? null : MB(peak),
          monitored: mine[0]!.monitored,
          ...(skipped ? { skipped } : {}),
          ...(note ? { note } : {}),
          errorSamples: merged?.errorSamples ?? [],
        });
      }
    }
  }
  return rows;
}

function machine(loadAverageStart: number[]): BenchReport['machine'] {
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repo, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: repo, encoding: 'utf8' }).trim();
    if (dirty) commit += ' (with uncommitted changes)';
  } catch {
    // not a git checkout
  }
  return {
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cores: os.availableParallelism(),
    ramGiB: os.totalmem() / 2 ** 30,
    node: process.version,
    kernel: `${os.type()} ${os.release()}`,
    loadAverageStart,
    loadAverageEnd: os.loadavg(),
    commit,
  };
}

/** The SVG charts of a run, written next to `base` (a path without extension). */
async function writeCharts(
  data: Pick<BenchReport, 'sweep' | 'rssSeries' | 'memory'> & { drivers: Driver[] },
  base: string,
): Promise<string[]> {
  const { sweep, rssSeries, memory } = data;
  const files: string[] = [];
  for (const driver of data.drivers) {
    const points = sweep.filter((s) => s.driver === driver && s.summary);
    if (points.length > 0) {
      const series: Series[] = [
        { label: 'uploads/s (left)', color: '#1f77b4', unit: 'uploads/s', points: points.map((p) => ({ x: p.concurrency, y: p.summary!.uploadsPerSecond })) },
        { label: 'p99 of admitted uploads, ms (right)', color: '#d62728', unit: 'p99 ms', axis: 'right', points: points.map((p) => ({ x: p.concurrency, y: p.summary!.p99 })) },
      ];
      const file = `${base}-sweep-${driver}.svg`;
      await writeFile(file, lineChart(series, { title: `256 KiB multipart uploads, ${driver} driver, default admission gate`, xLabel: 'uploads in flight (client concurrency)', xLog: true }));
      files.push(file);
    }
    const rss = [
      ...rssSeries.filter((r) => r.driver === driver && r.target === 'service').map((r) => ({ label: `service ${r.scenario}`, series: r.series })),
      ...memory.filter((m) => m.driver === driver && m.target === 'service' && m.scenario === 'memory-250mb' && m.series.length > 0).map((m) => ({ label: 'service one 250 MB', series: m.series })),
      ...rssSeries.filter((r) => r.driver === driver && r.target === 'peer' && r.scenario === 'large-multipart').map((r) => ({ label: `peer ${r.scenario}`, series: r.series })),
    ];
    if (rss.length > 0) {
      const colors = ['#1f77b4', '#ff7f0e', '#2ca02c', '#9467bd'];
      const series: Series[] = rss.slice(0, 4).map((r, index) => ({
        label: r.label,
        color: colors[index]!,
        unit: 'RSS MB',
        points: r.series.map((s) => ({ x: s.t / 1000, y: s.rss / 1e6 })),
      }));
      const file = `${base}-rss-${driver}.svg`;
      await writeFile(file, lineChart(series, { title: `Process RSS over time, ${driver} driver`, xLabel: 'seconds since the phase started', width: 860 }));
      files.push(file);
    }
  }
  return files;
}

// ---------------------------------------------------------------- private S3 server

const ownS3Env = {
  S3_TEST_DIR: join(os.tmpdir(), 'media-bench-s3'),
  S3_TEST_PORT: process.env.BENCH_OWN_S3_PORT ?? '7490',
  S3_TEST_MON_PORT: process.env.BENCH_OWN_S3_MON_PORT ?? '3390',
  // RGW frees deleted objects only after its gc delay (30 s here), while the large rows write
  // ~200 MB/s: give the RAM-backed OSD room for a few minutes of that (the tests' server has 4 GiB).
  S3_TEST_MEMSTORE_BYTES: process.env.BENCH_OWN_S3_BYTES ?? String(10 * 1024 ** 3),
};
let ownS3Started = false;

/** Runs scripts/s3-test-server.sh for the private cluster; resolves with the KEY=VALUE lines it printed. */
function ownS3(command: 'start' | 'stop'): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['scripts/s3-test-server.sh', command], { cwd: repo, env: { ...process.env, ...ownS3Env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk));
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`scripts/s3-test-server.sh ${command} exited with ${code}: ${err.trim().split('\n').slice(-5).join(' / ')}`));
      const env: Record<string, string> = {};
      for (const line of out.split('\n')) {
        const match = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
        if (match) env[match[1]!] = match[2]!;
      }
      resolve(env);
    });
  });
}

async function startOwnS3(): Promise<void> {
  log(`starting a private S3 server (Ceph RGW on 127.0.0.1:${ownS3Env.S3_TEST_PORT}, state in ${ownS3Env.S3_TEST_DIR})`);
  const env = await ownS3('start');
  ownS3Started = true;
  process.env.TEST_S3_ENDPOINT = env.S3_ENDPOINT ?? `http://127.0.0.1:${ownS3Env.S3_TEST_PORT}`;
  if (env.S3_REGION) process.env.TEST_S3_REGION = env.S3_REGION;
  if (env.S3_ACCESS_KEY_ID) process.env.TEST_S3_ACCESS_KEY_ID = env.S3_ACCESS_KEY_ID;
  if (env.S3_SECRET_ACCESS_KEY) process.env.TEST_S3_SECRET_ACCESS_KEY = env.S3_SECRET_ACCESS_KEY;
  // The space guard watches this cluster.
  process.env.S3_TEST_DIR = ownS3Env.S3_TEST_DIR;
  notes.push(`s3 rows ran against a private Ceph RGW started for this run (--own-s3), not the shared test server`);
}

/**
 * Before each s3 section on the private cluster: `start` does nothing while it is usable, and
 * rebuilds it empty when its OSD reports full. Seen once: RAM-backed memstore counted its used
 * bytes below zero ("16 EiB used"), engaged its full failsafe, and RGW then hung every write, so
 * every later phase ran into its timeout.
 */
async function keepOwnS3Usable(driver: Driver): Promise<void> {
  if (driver !== 's3' || !ownS3Started || !s3) return;
  await ownS3('start');
  s3 = { ...s3, settings: await ensureBucket(s3.client, s3.settings) };
}

// ---------------------------------------------------------------- main

async function cleanupEverything(): Promise<void> {
  for (const started of live) await started.stop().catch(() => undefined);
  live.clear();
  await client.stop().catch(() => undefined);
  if (s3) {
    await emptyPrefix(s3.client, s3.settings.bucket, runPrefix).catch(() => undefined);
    await collectGarbage();
    s3.client.destroy();
  }
  if (ownS3Started) {
    ownS3Started = false;
    await ownS3('stop').catch((error: unknown) => log(`stopping the private S3 server failed: ${String(error)}`));
  }
  await rm(workDir, { recursive: true, force: true }).catch(() => undefined);
  if (databaseUrl) await dropDatabase(options.pg, dbName).catch(() => undefined);
}

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    log(`${signal}: stopping the processes under test and cleaning up`);
    void cleanupEverything().finally(() => process.exit(130));
  });
}

async function main(): Promise<void> {
  const loadAverageStart = os.loadavg();
  await mkdir(options.out, { recursive: true });
  await rm(workDir, { recursive: true, force: true });
  await mkdir(workDir, { recursive: true });
  log(`scenarios: ${[...selected].join(', ')}; drivers: ${options.drivers.join(', ')}; ${rounds} round(s), ${phaseSeconds} s phases`);

  if (selected.has('pool')) pool = await poolVsInline();

  const needsServers = [...selected].some((name) => name !== 'pool');
  if (needsServers) {
    databaseUrl = await resetDatabase(options.pg, dbName);
    await client.start();
  }
  for (const driver of needsServers ? options.drivers : []) {
    if (driver === 's3') {
      try {
        if (options.ownS3) await startOwnS3();
        const settingsS3 = s3Settings();
        const probe = s3Client(settingsS3);
        const bucketSettings = await ensureBucket(probe, settingsS3);
        await probe.send(new ListObjectsV2Command({ Bucket: bucketSettings.bucket, MaxKeys: 1 }), { abortSignal: AbortSignal.timeout(10_000) });
        s3 = { settings: bucketSettings, client: probe };
        await emptyPrefix(probe, bucketSettings.bucket, runPrefix);
      } catch (error) {
        const message = `s3 driver skipped: the S3 server at ${s3Settings().endpoint} did not answer (${(error as Error).name}: ${(error as Error).message}); start it with scripts/s3-test-server.sh start`;
        notes.push(message);
        log(message);
        continue;
      }
    }
    // A database of its own per driver: a service refuses to start on a store that does not hold the rows' files.
    if (driver !== options.drivers[0]) databaseUrl = await resetDatabase(options.pg, dbName);
    const wantsGroup = [...THROUGHPUT, 'admission', 'sweep'].some((name) => selected.has(name as ScenarioName));
    if (wantsGroup) {
      log(`starting the service and references for ${driver}`);
      let ctx: DriverContext | null = null;
      try {
        ctx = await startDriver(driver);
        await warmUp(ctx);
        await throughputScenarios(ctx);
        await admissionScenarios(ctx);
      } catch (error) {
        notes.push(`${driver}: ${(error as Error).message.split('\n')[0]}`);
        log(`${driver} failed: ${(error as Error).stack}`);
      } finally {
        if (ctx) await stopDriver(ctx);
      }
    }
    for (const comparison of COMPARISONS) {
      if (!selected.has(comparison.name)) continue;
      await keepOwnS3Usable(driver);
      await settingsScenario(driver, comparison);
    }
    await keepOwnS3Usable(driver);
    await memoryScenarios(driver);
  }

  const finishedAt = new Date();
  const throughput = summarizeThroughput();
  const charts = await writeCharts({ sweep, rssSeries, memory, drivers: options.drivers }, join(options.out, stamp));
  const jsonFile = join(options.out, `${stamp}.json`);
  const mdFile = join(options.out, `${stamp}.md`);
  const report: BenchReport = {
    startedAt: startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    seconds: (finishedAt.getTime() - startedAt.getTime()) / 1000,
    argv: process.argv.slice(2),
    settings: { ...settings, scenarios: [...selected], drivers: options.drivers, quick: options.quick },
    machine: machine(loadAverageStart),
    serviceSettings: { RATE_LIMIT_POINTS: '1000000', RATE_LIMIT_DURATION_SECONDS: '1', note: 'everything else at its default (config/default.json)' },
    notes,
    throughput,
    phases: phases.map((p) => ({ ...p, result: p.result ? { ...p.result, latencies: [] } : null })),
    rssSeries,
    memory,
    admission,
    sweep,
    scaling,
    pool,
    processLogs,
    files: { markdown: relative(repo, mdFile), json: relative(repo, jsonFile), charts: charts.map((file) => relative(repo, file)) },
  };
  await writeFile(jsonFile, `${JSON.stringify(report, null, 1)}\n`);
  await writeFile(mdFile, renderMarkdown(report));
  log(`wrote ${relative(repo, mdFile)}, ${relative(repo, jsonFile)}${charts.length ? `, ${charts.map((file) => relative(repo, file)).join(', ')}` : ''}`);
  log(`done in ${report.seconds.toFixed(0)} s`);
}

/** --render: the markdown and charts again from a run's JSON (e.g. after the report format changed). */
async function render(file: string): Promise<void> {
  const report = JSON.parse(await readFile(file, 'utf8')) as BenchReport;
  const base = file.replace(/\.json$/, '');
  const charts = await writeCharts({ sweep: report.sweep, rssSeries: report.rssSeries, memory: report.memory, drivers: report.settings.drivers }, base);
  report.files = { ...report.files, charts: charts.map((chart) => relative(repo, chart)) };
  await writeFile(`${base}.md`, renderMarkdown(report));
  console.log(`wrote ${relative(repo, `${base}.md`)}${charts.length ? `, ${charts.map((chart) => relative(repo, chart)).join(', ')}` : ''}`);
}

if (options.render) {
  await render(options.render);
  process.exit(0);
}

try {
  await main();
} catch (error) {
  log(`failed: ${(error as Error).stack ?? String(error)}`);
  process.exitCode = 1;
} finally {
  await cleanupEverything();
}
