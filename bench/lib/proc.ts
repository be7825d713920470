/**
 * CPU time and resident memory of a process tree, read from /proc (Linux only).
 *
 * CPU: utime + stime of /proc/<pid>/stat (fields 14 and 15, in clock ticks) of the process and
 * every descendant; worker threads are counted in their process. RSS: resident pages of
 * /proc/<pid>/statm times the page size (the same number as VmRSS of /proc/<pid>/status).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

function getconf(name: string, fallback: number): number {
  try {
    const value = Number(execFileSync('getconf', [name], { encoding: 'utf8' }).trim());
    return Number.isFinite(value) && value > 0 ? value : fallback;
  } catch {
    return fallback;
  }
}

const CLOCK_TICKS = getconf('CLK_TCK', 100);
const PAGE_SIZE = getconf('PAGESIZE', 4096);

function readOrNull(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/** Fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses). */
function statFields(pid: number): string[] | null {
  const text = readOrNull(`/proc/${pid}/stat`);
  if (text === null) return null;
  const close = text.lastIndexOf(')');
  // Field 3 (state) is the first after ')': index 0 here is field 3.
  return text.slice(close + 2).trim().split(' ');
}

/** `pid` and all its descendants that are alive now. */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [pid];
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(Number(entry));
    if (!fields) continue;
    const parent = Number(fields[1]); // field 4: ppid
    const list = children.get(parent);
    if (list) list.push(Number(entry));
    else children.set(parent, [Number(entry)]);
  }
  const tree: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const next = queue.shift()!;
    tree.push(next);
    queue.push(...(children.get(next) ?? []));
  }
  return tree;
}

/** CPU seconds (user + system) used so far by the given processes; gone ones count 0. */
export function cpuSeconds(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    const fields = statFields(pid);
    if (!fields) continue;
    ticks += Number(fields[11]) + Number(fields[12]); // fields 14 and 15
  }
  return ticks / CLOCK_TICKS;
}

/** Resident set size in bytes of the given processes together. */
export function rssBytes(pids: number[]): number {
  let pages = 0;
  for (const pid of pids) {
    const text = readOrNull(`/proc/${pid}/statm`);
    if (text === null) continue;
    pages += Number(text.split(' ')[1]);
  }
  return pages * PAGE_SIZE;
}

export interface RssSample {
  /** Milliseconds since the sampler started. */
  t: number;
  rss: number;
}

export interface ProcessUsage {
  cpuSeconds: number;
  peakRss: number;
  /** Mean of the samples. */
  meanRss: number;
  series: RssSample[];
}

/**
 * Samples the RSS of a process tree every `intervalMs` and measures its CPU time between start()
 * and stop(). The tree is re-read every second (a process may start children).
 */
export class ProcessMonitor {
  private readonly root: number;
  private readonly intervalMs: number;
  private pids: number[] = [];
  private timer: NodeJS.Timeout | null = null;
  private treeTimer: NodeJS.Timeout | null = null;
  private started = 0;
  private cpuAtStart = 0;
  private samples: RssSample[] = [];

  constructor(root: number, intervalMs = 50) {
    this.root = root;
    this.intervalMs = intervalMs;
  }

  start(): void {
    this.pids = processTree(this.root);
    this.started = performance.now();
    this.cpuAtStart = cpuSeconds(this.pids);
    this.samples = [];
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.treeTimer = setInterval(() => {
      this.pids = processTree(this.root);
    }, 1000);
  }

  private sample(): void {
    this.samples.push({ t: Math.round(performance.now() - this.started), rss: rssBytes(this.pids) });
  }

  stop(): ProcessUsage {
    if (this.timer) clearInterval(this.timer);
    if (this.treeTimer) clearInterval(this.treeTimer);
    this.timer = null;
    this.treeTimer = null;
    this.sample();
    const cpu = cpuSeconds(this.pids) - this.cpuAtStart;
    const peakRss = Math.max(...this.samples.map((sample) => sample.rss));
    const meanRss = this.samples.reduce((sum, sample) => sum + sample.rss, 0) / this.samples.length;
    return { cpuSeconds: cpu, peakRss, meanRss, series: this.samples };
  }
}

/** Median RSS of a process tree over `ms` milliseconds (its idle level). */
export async function idleRss(root: number, ms = 1000, intervalMs = 50): Promise<number> {
  const pids = processTree(root);
  const values: number[] = [];
  const end = performance.now() + ms;
  while (performance.now() < end) {
    values.push(rssBytes(pids));
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  values.sort((a, b) => a - b);
  return values[Math.floor(values.length / 2)] ?? rssBytes(pids);
}
