import PQueue from 'p-queue';
import { uploadBusy } from '../../errors/errors.ts';
import type { ServiceError } from '../../errors/service-error.ts';

export interface AdmissionGateOptions {
  concurrency: number;
  queueLimit: number;
  retryAfterSeconds: number;
  /** The share (0 to 1] of `concurrency + queueLimit` places one team may hold, running and waiting together. */
  teamMaxShare: number;
}

/** The places one team may hold: its share of every place, at least one. */
export function teamPlaceLimit(options: Pick<AdmissionGateOptions, 'concurrency' | 'queueLimit' | 'teamMaxShare'>): number {
  return Math.max(1, Math.floor(options.teamMaxShare * (options.concurrency + options.queueLimit)));
}

/**
 * Bounds the uploads of one instance: `concurrency` run, `queueLimit` wait
 * (their sockets paused, no body byte read), and the next is refused at once
 * with 503 error.media.uploadBusy and Retry-After, instead of slowing every
 * upload down.
 *
 * One team may hold at most `teamMaxShare` of all places (running and waiting
 * together); past that its next upload is refused the same way while other
 * teams are still admitted, so one team with many keys cannot starve the rest.
 */
export class AdmissionGate {
  private readonly queue: PQueue;
  private readonly queueLimit: number;
  private readonly retryAfterSeconds: number;
  /** Most places (running + waiting) one team may hold. */
  readonly teamLimit: number;
  /** Places held per team; a team is absent when it holds none. */
  private readonly held = new Map<string, number>();
  private closed = false;
  /** Aborts of the uploads waiting for a slot; close() refuses them. Running ones are not in it. */
  private readonly waitingAborts = new Set<AbortController>();

  constructor(options: AdmissionGateOptions) {
    this.queue = new PQueue({ concurrency: options.concurrency });
    this.queueLimit = options.queueLimit;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.teamLimit = teamPlaceLimit(options);
  }

  get running(): number {
    return this.queue.pending;
  }

  get waiting(): number {
    return this.queue.size;
  }

  /** Places (running and waiting) `teamId` holds now. */
  heldBy(teamId: string): number {
    return this.held.get(teamId) ?? 0;
  }

  /**
   * Waits for a slot and resolves with its release function, which the caller
   * must call exactly once. Throws uploadBusy when the waiting room is full,
   * when `teamId` already holds its share of the places, or when the gate is
   * closed; an aborted `signal` takes the request out of the queue.
   */
  async admit(teamId: string, signal?: AbortSignal): Promise<() => void> {
    const refusal = this.refusal(teamId);
    if (refusal) throw refusal;
    this.take(teamId);
    let holding = true;
    const giveBack = () => {
      if (holding) {
        holding = false;
        this.give(teamId);
      }
    };
    // Only a waiting upload is taken out by close(): a running one's signal must stay quiet, or the
    // queue would count its slot free while it still runs.
    const wait = new AbortController();
    this.waitingAborts.add(wait);
    let started = false;
    return new Promise<() => void>((resolve, reject) => {
      this.queue
        .add(
          () =>
            new Promise<void>((release) => {
              started = true;
              this.waitingAborts.delete(wait);
              let released = false;
              resolve(() => {
                if (!released) {
                  released = true;
                  giveBack();
                  release();
                }
              });
            }),
          { signal: signal ? AbortSignal.any([signal, wait.signal]) : wait.signal },
        )
        .catch((error: unknown) => {
          // Taken out while waiting: its team's place is given back now. A started upload keeps its
          // place until its release, whatever its signal does.
          if (!started) giveBack();
          reject(wait.signal.aborted ? uploadBusy(this.retryAfterSeconds) : error);
        })
        .finally(() => this.waitingAborts.delete(wait));
    });
  }

  /** The uploadBusy that admit() would throw right now, or null; takes nothing (an upload that would be refused skips its other work). */
  refusal(teamId: string): ServiceError | null {
    const free = this.queue.pending < this.queue.concurrency;
    if (this.closed || (!free && this.queue.size >= this.queueLimit)) return uploadBusy(this.retryAfterSeconds);
    if (this.heldBy(teamId) >= this.teamLimit) {
      return uploadBusy(this.retryAfterSeconds, 'This team holds its share of the upload capacity of this instance, retry later');
    }
    return null;
  }

  private take(teamId: string): void {
    this.held.set(teamId, this.heldBy(teamId) + 1);
  }

  private give(teamId: string): void {
    const left = this.heldBy(teamId) - 1;
    if (left > 0) this.held.set(teamId, left);
    else this.held.delete(teamId);
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
