import type { Logger } from 'pino';
import { JobRunner } from '../jobs/job-runner.ts';

/** What /healthz reports of a dependency. */
export interface DependencyStatus {
  available: boolean;
  /** Why the dependency is not usable; null while it is. */
  cause: string | null;
}

export interface DependencyProbeOptions<S extends DependencyStatus> {
  /** The dependency as log lines name it: `<name> unavailable`, `<name> available`. */
  name: string;
  logger: Pick<Logger, 'info' | 'error'>;
  /** Fields every state-change line carries (e.g. the storage driver); none: the recovery line is the bare message. */
  logFields?: Record<string, unknown>;
  /** The status before the first check. */
  initial: S;
  /**
   * How often start() re-checks: every N ms, or N ms after the previous check ended, N from the status then (the database is
   * checked more often while it is down).
   */
  recheckMs: number | ((status: S) => number);
  /** Requests that suspect the dependency (suspect()) check it at most this often. */
  suspectMinGapMs?: number;
}

/**
 * Whether a dependency (the database, the object storage) is usable, for start-up and /healthz, which reads the last result
 * only. At most one check runs at a time (a check already running is shared); a change of state is logged once; start()
 * re-checks on the probe's schedule through a JobRunner until stop(). Subclasses say how to check (probe(), never throwing).
 */
export abstract class DependencyProbe<S extends DependencyStatus> {
  protected readonly logger: Pick<Logger, 'info' | 'error'>;
  private readonly name: string;
  private readonly logFields: Record<string, unknown> | null;
  private readonly suspectMinGapMs: number;
  private readonly runner: JobRunner;
  private current: S;
  private running: Promise<S> | null = null;
  private lastCheckEnded = 0;
  private stopped = false;

  constructor(options: DependencyProbeOptions<S>) {
    this.name = options.name;
    this.logger = options.logger;
    this.logFields = options.logFields ?? null;
    this.current = options.initial;
    this.suspectMinGapMs = options.suspectMinGapMs ?? 0;
    const { recheckMs } = options;
    const schedule = typeof recheckMs === 'number' ? { everyMs: recheckMs } : { pauseMs: () => recheckMs(this.current) };
    // check() never throws (probe() answers failures as a status).
    this.runner = new JobRunner({ name: `${options.name}-probe`, schedule }, { work: () => this.check(), onError: () => undefined });
  }

  get status(): S {
    return this.current;
  }

  /** Checks once (a check already running is shared); logs when the state changes. */
  check(): Promise<S> {
    this.running ??= this.probe()
      .then((next) => {
        this.record(next);
        return next;
      })
      .finally(() => {
        this.running = null;
        this.lastCheckEnded = Date.now();
      });
    return this.running;
  }

  /** A request could not reach the dependency: check now, unless a check just ran or is running. */
  suspect(): void {
    if (this.stopped || this.running || Date.now() - this.lastCheckEnded < this.suspectMinGapMs) return;
    void this.check();
  }

  /** Re-checks on the schedule until stop(). */
  start(): void {
    if (this.stopped) return;
    this.runner.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.runner.stop();
    await this.running;
  }

  /** One check of the dependency; answers its status, never throws. */
  protected abstract probe(): Promise<S>;

  /** Takes `next` as the status and logs a change of state (a new cause counts as one). */
  protected record(next: S): void {
    const before = this.current;
    // A failure after stop() is the probe's own shutdown (its connection closed), not news.
    if (this.stopped && !next.available) return;
    this.current = next;
    if (!next.available && (before.available || before.cause !== next.cause)) {
      this.logger.error({ ...this.logFields, cause: next.cause }, `${this.name} unavailable`);
    } else if (next.available && !before.available) {
      if (this.logFields) this.logger.info(this.logFields, `${this.name} available`);
      else this.logger.info(`${this.name} available`);
    }
  }
}
