import PQueue from 'p-queue';
import { uploadBusy } from '../errors/errors.ts';

export interface AdmissionGateOptions {
  concurrency: number;
  queueLimit: number;
  retryAfterSeconds: number;
}

/**
 * Bounds the uploads of one instance: `concurrency` run, `queueLimit` wait
 * (their sockets paused, no body byte read), and the next is refused at once
 * with 503 error.media.uploadBusy and Retry-After, instead of slowing every
 * upload down.
 */
export class AdmissionGate {
  private readonly queue: PQueue;
  private readonly queueLimit: number;
  private readonly retryAfterSeconds: number;
  private closed = false;

  constructor(options: AdmissionGateOptions) {
    this.queue = new PQueue({ concurrency: options.concurrency });
    this.queueLimit = options.queueLimit;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  get running(): number {
    return this.queue.pending;
  }

  get waiting(): number {
    return this.queue.size;
  }

  /**
   * Waits for a slot and resolves with its release function, which the caller
   * must call exactly once. Throws uploadBusy when the waiting room is full or
   * the gate is closed; an aborted `signal` takes the request out of the queue.
   */
  async admit(signal?: AbortSignal): Promise<() => void> {
    const free = this.queue.pending < this.queue.concurrency;
    if (this.closed || (!free && this.queue.size >= this.queueLimit)) throw uploadBusy(this.retryAfterSeconds);
    return new Promise<() => void>((resolve, reject) => {
      this.queue
        .add(
          () =>
            new Promise<void>((release) => {
              let released = false;
              resolve(() => {
                if (!released) {
                  released = true;
                  release();
                }
              });
            }),
          { signal },
        )
        .catch(reject);
    });
  }

  /** Refuses new uploads from now on (shutdown); running ones finish. */
  close(): void {
    this.closed = true;
  }

  /** Resolves when no upload runs or waits. */
  async idle(): Promise<void> {
    await this.queue.onIdle();
  }
}
