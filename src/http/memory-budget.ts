/**
 * Bytes that all request bodies of a process may hold in memory together, past what each body is
 * granted on its own. It lets a body that is briefly ahead of storage (a large upload from a fast
 * client) stay in memory instead of going through the spool, without that allowance multiplying
 * by the number of uploads in flight.
 */
export class MemoryBudget {
  readonly limit: number;
  #used = 0;

  constructor(limit: number) {
    this.limit = limit;
  }

  get used(): number {
    return this.#used;
  }

  /** Takes `bytes` if they fit; false (and nothing taken) if not. */
  take(bytes: number): boolean {
    if (this.#used + bytes > this.limit) return false;
    this.#used += bytes;
    return true;
  }

  give(bytes: number): void {
    this.#used -= bytes;
  }
}
