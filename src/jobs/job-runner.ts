/**
 * Runs `task` every `intervalMs`, never two runs at once (a tick while one runs is skipped).
 * Failures go to `onError`, never thrown; the timer never keeps the process alive. `stop()`
 * waits for a run in progress.
 */
export class PeriodicRun {
  private readonly task: () => Promise<unknown>;
  private readonly onError: (error: unknown) => void;
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<unknown> | null = null;

  constructor(task: () => Promise<unknown>, onError: (error: unknown) => void) {
    this.task = task;
    this.onError = onError;
  }

  /** `runNow`: the first run at once rather than after the first interval. */
  start(intervalMs: number, options: { runNow?: boolean } = {}): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.tick(), intervalMs);
    this.timer.unref();
    if (options.runNow) this.tick();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.current?.catch(() => undefined);
  }

  private tick(): void {
    if (this.current) return;
    const run = this.task()
      .catch(this.onError)
      .finally(() => {
        if (this.current === run) this.current = null;
      });
    this.current = run;
  }
}
