import type { MikroORM } from '@mikro-orm/postgresql';
import { runInJobSlot, type JobSlot } from './job-slot.ts';

/** When a job runs (the list of jobs and their schedules: ./jobs.ts). */
export type Schedule =
  /** Every `everyMs` from start() on; a time that comes while the previous run still goes is skipped. `atStart`: a first run at once. */
  | { everyMs: number; atStart?: boolean }
  /**
   * A little after every multiple of `alignedMs` on the clock (the hour, the minute): `delayMs` plus up to `maxJitterMs` at
   * random (each at most a tenth of the interval), counted from the end of the previous run. Instances fire together and the
   * slot claim picks one.
   */
  | { alignedMs: number; delayMs: number; maxJitterMs?: number }
  /** `pauseMs()` after the previous run ended, asked anew each time (a dependency probe checks more often while it is down). */
  | { pauseMs: () => number };

export interface JobDefinition {
  /** In log lines and, for a once-across-instances job, `job_run.job`. */
  name: string;
  schedule: Schedule;
  /** Once across instances: each run claims its slot in `job_run` (runInJobSlot). Absent: every instance runs the job. */
  once?: JobSlot;
}

/** A run's outcome: `ran: false` when another instance holds the lock or already claimed the slot. */
export type JobRun<T> = { ran: true; slot: Date | null; result: T } | { ran: false };

export interface JobRunnerOptions<T> {
  /** The job's work for one run; `slot` is the claimed hour or minute of a once-across-instances job, else null. */
  work: (now: Date, slot: Date | null) => Promise<T>;
  /** Failures of timer runs go here, never thrown. */
  onError: (error: unknown) => void;
  /** Required for a once-across-instances job (the slot claim). */
  orm?: MikroORM;
}

/**
 * Runs one job on its schedule: never two timer runs at once, failures to `onError` (never thrown), the timer never keeps the
 * process alive, and `stop()` waits for a run in progress. `runOnce()` runs it now, outside the timer (tests, start-up).
 */
export class JobRunner<T = unknown> {
  readonly definition: JobDefinition;
  private readonly work: JobRunnerOptions<T>['work'];
  private readonly onError: (error: unknown) => void;
  private readonly orm: MikroORM | null;
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<unknown> | null = null;
  private started = false;

  constructor(definition: JobDefinition, options: JobRunnerOptions<T>) {
    if (definition.once && !options.orm) throw new Error(`the job ${definition.name} runs once across instances and needs the orm`);
    this.definition = definition;
    this.work = options.work;
    this.onError = options.onError;
    this.orm = options.orm ?? null;
  }

  /** One run for `now`; for a once-across-instances job, only if this instance claims the slot of `now`. */
  async runOnce(now = new Date()): Promise<JobRun<T>> {
    const { once, name } = this.definition;
    if (!once) return { ran: true, slot: null, result: await this.work(now, null) };
    return runInJobSlot(this.orm!, name, once, now, (slot) => this.work(now, slot));
  }

  /** Starts the timer; `intervalMs` replaces the definition's interval (a setting, or a test's short one). */
  start(intervalMs?: number): void {
    if (this.started) return;
    this.started = true;
    const schedule = this.definition.schedule;
    if ('everyMs' in schedule) {
      this.timer = setInterval(() => void this.tick(), intervalMs ?? schedule.everyMs);
      this.timer.unref();
      if (schedule.atStart) void this.tick();
      return;
    }
    const nextDelay =
      'alignedMs' in schedule ? () => delayToNextBoundary(intervalMs ?? schedule.alignedMs, schedule.delayMs, schedule.maxJitterMs ?? 0) : schedule.pauseMs;
    const arm = (): void => {
      this.timer = setTimeout(() => {
        this.timer = null;
        void this.tick().finally(() => {
          if (this.started && !this.timer) arm();
        });
      }, nextDelay());
      this.timer.unref();
    };
    arm();
  }

  async stop(): Promise<void> {
    this.started = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.current?.catch(() => undefined);
  }

  /** A timer run, unless one is still going (then that one). */
  private tick(): Promise<unknown> {
    if (this.current) return this.current;
    const run = this.runOnce()
      .catch(this.onError)
      .finally(() => {
        if (this.current === run) this.current = null;
      });
    this.current = run;
    return run;
  }
}

function delayToNextBoundary(intervalMs: number, delayMs: number, maxJitterMs: number): number {
  const now = Date.now();
  const jitter = Math.floor(Math.random() * Math.min(maxJitterMs, intervalMs / 10));
  return Math.ceil((now + 1) / intervalMs) * intervalMs - now + Math.min(delayMs, intervalMs / 10) + jitter;
}
