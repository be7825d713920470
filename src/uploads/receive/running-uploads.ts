import type { MikroORM } from '@mikro-orm/postgresql';

/** How often running uploads refresh their reservations' updated_at, so the crash sweeper can tell them from a dead instance's. */
export const RESERVATION_REFRESH_MS = 60_000;

/** An upload between its first body byte and its answer, as shutdown and the crash sweeper see it. */
export interface RunningUpload {
  /** The media id, also the id of its upload_reservation row. */
  id: string;
  storageKey: string;
  /** Aborts it if it still receives its body; a commit under way is left to finish. */
  abort(reason: Error): void;
  settled: Promise<unknown>;
}

/**
 * The uploads running on this instance: their reservations' heartbeat (while
 * any runs), shutdown's drain and abort, and the crash sweeper's list of what
 * to leave alone.
 */
export class RunningUploads {
  private readonly orm: MikroORM;
  private readonly running = new Set<RunningUpload>();
  private refreshTimer: NodeJS.Timeout | null = null;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  get size(): number {
    return this.running.size;
  }

  add(upload: RunningUpload): void {
    this.running.add(upload);
    if (!this.refreshTimer) {
      this.refreshTimer = setInterval(() => this.refreshReservations(), RESERVATION_REFRESH_MS);
      this.refreshTimer.unref();
    }
  }

  delete(upload: RunningUpload): void {
    this.running.delete(upload);
    if (this.running.size === 0 && this.refreshTimer) {
      clearInterval(this.refreshTimer);
      this.refreshTimer = null;
    }
  }

  /** Reservation ids and storage keys of the running uploads. */
  list(): { id: string; storageKey: string }[] {
    return [...this.running].map((upload) => ({ id: upload.id, storageKey: upload.storageKey }));
  }

  /** Resolves true once no upload runs, or false when `timeoutMs` passed first. */
  async drain(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.running.size > 0) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) return false;
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, remaining)));
      await Promise.race([Promise.allSettled([...this.running].map((upload) => upload.settled)), timedOut]);
      clearTimeout(timer);
    }
    return true;
  }

  abortAll(reason: Error): void {
    for (const upload of this.running) upload.abort(reason);
  }

  /** Marks the running uploads' reservations as alive (crash sweeper, issue 6.2). Best effort: a failure is retried next minute. */
  private refreshReservations(): void {
    const ids = [...this.running].map((upload) => upload.id);
    if (ids.length === 0) return;
    void this.orm.em
      .fork()
      .getConnection()
      .execute(`update upload_reservation set updated_at = now() where id in (${ids.map(() => '?').join(', ')})`, ids)
      .catch(() => undefined);
  }
}
