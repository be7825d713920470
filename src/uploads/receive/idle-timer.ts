/**
 * Counts how long the client has sent nothing while we wait for it: restarted
 * by every chunk, suspended while we hold the body paused, stopped at its end.
 * One timer for the upload's life: a chunk only refreshes it (no clearing and
 * re-arming per chunk).
 */
export class IdleTimer {
  private readonly timeoutMs: number;
  private readonly onIdle: () => void;
  private timer: NodeJS.Timeout | null = null;
  private paused = false;
  private stopped = false;

  constructor(timeoutMs: number, onIdle: () => void) {
    this.timeoutMs = timeoutMs;
    this.onIdle = onIdle;
  }

  start(): void {
    this.arm();
  }

  touch(): void {
    if (this.timer) this.timer.refresh();
  }

  pause(): void {
    this.paused = true;
    this.clear();
  }

  resume(): void {
    this.paused = false;
    this.arm();
  }

  stop(): void {
    this.stopped = true;
    this.clear();
  }

  private arm(): void {
    if (this.stopped || this.paused) return;
    if (this.timer) {
      this.timer.refresh();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      this.stopped = true;
      this.onIdle();
    }, this.timeoutMs);
  }

  private clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
