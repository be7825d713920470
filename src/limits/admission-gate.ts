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
  /** Aborts of the uploads waiting for a slot; close() refuses them. Running ones are not in it. */
  private readonly waitingAborts = new Set<AbortController>();

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
    // Only a waiting upload is taken out by close(): a running one's signal must stay quiet, or the
    // queue would count its slot free while it still runs.
    const wait = new AbortController();
    this.waitingAborts.add(wait);
    return new Promise<() => void>((resolve, reject) => {
      this.queue
        .add(
          () =>
            new Promise<void>((release) => {
              this.waitingAborts.delete(wait);
              let released = false;
              resolve(() => {
                if (!released) {
                  released = true;
                  release();
                }
              });
            }),
          { signal: signal ? AbortSignal.any([signal, wait.signal]) : wait.signal },
        )
        .catch((error: unknown) => reject(wait.signal.aborted ? uploadBusy(this.retryAfterSeconds) : error))
        .finally(() => this.waitingAborts.delete(wait));
    });
  }

  /** Refuses new uploads from now on (shutdown), and the waiting ones with 503 uploadBusy; running ones finish. */
  close(): void {
    this.closed = true;
    for (const wait of this.waitingAborts) wait.abort();
    this.waitingAborts.clear();
  }

  /** Resolves when no upload runs or waits. */
  async idle(): Promise<void> {
    await this.queue.onIdle();
  }
}
