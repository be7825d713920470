// How long an early answer's connection is kept reading (and discarding) the rest of a request body
// before it is closed: nginx's lingering close, with nginx's defaults (`lingering_time 30s`: the most
// in all; `lingering_timeout 5s`: the most between two reads). Closing while the client still sends
// makes the kernel answer with a reset, which also drops the answer the client has not read yet.

/** Most time, from the answer on, that the rest of a body is read and discarded (nginx's `lingering_time`). */
export const LINGERING_TIME_MS = 30_000;

/** Most time without body bytes before the connection is closed anyway (nginx's `lingering_timeout`). */
export const LINGERING_TIMEOUT_MS = 5_000;

/**
 * The timers of one lingering close: `close` runs once, when the body ends, when no byte has
 * arrived for LINGERING_TIMEOUT_MS, or LINGERING_TIME_MS after the start; never after cancel().
 */
export class LingeringClose {
  private readonly close: () => void;
  private readonly total: NodeJS.Timeout;
  private readonly idle: NodeJS.Timeout;
  private done = false;

  constructor(close: () => void) {
    this.close = close;
    // unref: a lingering connection does not keep the process alive (shutdown closes it anyway).
    this.total = setTimeout(() => this.finish(), LINGERING_TIME_MS).unref();
    this.idle = setTimeout(() => this.finish(), LINGERING_TIMEOUT_MS).unref();
  }

  /** Body bytes arrived (and were discarded); `isLast` when the body is over. */
  arrived(isLast: boolean): void {
    if (this.done) return;
    if (isLast) this.finish();
    else this.idle.refresh();
  }

  /** The connection is gone: nothing more to close. */
  cancel(): void {
    this.done = true;
    clearTimeout(this.total);
    clearTimeout(this.idle);
  }

  private finish(): void {
    if (this.done) return;
    this.cancel();
    this.close();
  }
}
