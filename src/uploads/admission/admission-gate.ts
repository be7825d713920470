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
  private readonly concurrency: number;
  private readonly queueLimit: number;
  private readonly retryAfterSeconds: number;
  /** Most places (running + waiting) one team may hold. */
  readonly teamLimit: number;
  /** Places held per team; a team is absent when it holds none. */
  private readonly held = new Map<string, number>();
  private closed = false;
  private runningCount = 0;
  /**
   * The uploads waiting for a slot, first come first served (a Set keeps insertion order, and one
   * that gives up leaves from the middle at once). An upload that finds a slot free and nobody
   * waiting runs at once, with no queue entry or abort listener of its own.
   */
  private readonly waiters = new Set<Waiter>();
  private readonly idleWaiters: Array<() => void> = [];

  constructor(options: AdmissionGateOptions) {
    this.concurrency = Math.max(1, options.concurrency);
    this.queueLimit = options.queueLimit;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.teamLimit = teamPlaceLimit(options);
  }

  get running(): number {
    return this.runningCount;
  }

  get waiting(): number {
    return this.waiters.size;
  }

  /** Places (running and waiting) `teamId` holds now. */
  heldBy(teamId: string): number {
    return this.held.get(teamId) ?? 0;
  }

  /**
   * Waits for a slot and resolves with its release function, which the caller
   * must call exactly once (a second call does nothing). Throws uploadBusy when
   * the waiting room is full, when `teamId` already holds its share of the
   * places, or when the gate is closed; an aborted `signal` takes the request
   * out of the queue (rejecting with the signal's reason).
   */
  async admit(teamId: string, signal?: AbortSignal): Promise<() => void> {
    const refusal = this.refusal(teamId);
    if (refusal) throw refusal;
    signal?.throwIfAborted();
    this.take(teamId);
    if (this.runningCount < this.concurrency && this.waiters.size === 0) {
      this.runningCount++;
      return this.releaseOf(teamId);
    }
    return new Promise<() => void>((resolve, reject) => {
      const waiter: Waiter = {
        start: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(this.releaseOf(teamId));
        },
        refuse: (error) => {
          signal?.removeEventListener('abort', onAbort);
          this.waiters.delete(waiter);
          this.give(teamId);
          reject(error);
          this.settleIdle();
        },
      };
      const onAbort = () => waiter.refuse(signal!.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(waiter);
    });
  }

  /** The uploadBusy that admit() would throw right now, or null; takes nothing (an upload that would be refused skips its other work). */
  refusal(teamId: string): ServiceError | null {
    const free = this.runningCount < this.concurrency;
    if (this.closed || (!free && this.waiters.size >= this.queueLimit)) return uploadBusy(this.retryAfterSeconds);
    if (this.heldBy(teamId) >= this.teamLimit) {
      return uploadBusy(this.retryAfterSeconds, 'This team holds its share of the upload capacity of this instance, retry later');
    }
    return null;
  }

  /** A running upload's release: its slot goes to the first waiter, or is freed. */
  private releaseOf(teamId: string): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.give(teamId);
      const next = this.waiters.values().next();
      if (next.done) {
        this.runningCount--;
        this.settleIdle();
      } else {
        // The slot passes on: running stays the same.
        this.waiters.delete(next.value);
        next.value.start();
      }
    };
  }

  private take(teamId: string): void {
    this.held.set(teamId, this.heldBy(teamId) + 1);
  }

  private give(teamId: string): void {
    const left = this.heldBy(teamId) - 1;
    if (left > 0) this.held.set(teamId, left);
    else this.held.delete(teamId);
  }

  private settleIdle(): void {
    if (this.runningCount > 0 || this.waiters.size > 0) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  /** Refuses new uploads from now on (shutdown), and the waiting ones with 503 uploadBusy; running ones finish. */
  close(): void {
    this.closed = true;
    for (const waiter of [...this.waiters]) waiter.refuse(uploadBusy(this.retryAfterSeconds));
  }

  /** Resolves when no upload runs or waits. */
  idle(): Promise<void> {
    if (this.runningCount === 0 && this.waiters.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}

interface Waiter {
  /** Its turn came: it runs now, holding the slot it was handed. */
  start(): void;
  /** It gives up (its client left) or is refused (close): out of the queue, its team's place given back. */
  refuse(error: unknown): void;
}
