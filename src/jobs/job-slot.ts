import type { MikroORM } from '@mikro-orm/postgresql';

/** How a once-across-instances job claims its turn (the keys in use: ./jobs.ts). */
export interface JobSlot {
  /** The pg advisory lock key of the job. */
  lockKey: number;
  /** The slot a run owns: the hour or the minute of its `now`. */
  unit: 'hour' | 'minute';
}

export type SlotRun<T> = { ran: true; slot: Date; result: T } | { ran: false };

/**
 * Runs `work` once per slot across every instance sharing the database: first a
 * transaction-scoped advisory lock (held on one connection for the whole run, so a slow run never
 * overlaps the next one), then the slot claimed in `job_run` (under the job's name) with `insert ... on conflict do
 * nothing returning`. Only the instance whose insert returns a row runs; the others answer
 * `ran: false`. A claimed slot is not retried, even if its run failed: the next slot catches up.
 */
export async function runInJobSlot<T>(orm: MikroORM, job: string, options: JobSlot, now: Date, work: (slot: Date) => Promise<T>): Promise<SlotRun<T>> {
  const lockEm = orm.em.fork();
  await lockEm.begin();
  try {
    const [lock] = await lockEm.execute<{ locked: boolean }[]>('select pg_try_advisory_xact_lock(?) as locked', [options.lockKey]);
    if (!lock?.locked) return { ran: false };
    const claimed = await orm.em.fork().execute<{ slot: Date }[]>(
      `insert into job_run (job, slot, started_at) values (?, date_trunc('${options.unit}', ?::timestamptz), now()) on conflict do nothing returning slot`,
      [job, now],
    );
    const slot = claimed[0]?.slot;
    if (!slot) return { ran: false };
    const result = await work(slot);
    await orm.em.fork().execute('update job_run set finished_at = now() where job = ? and slot = ?', [job, slot]);
    return { ran: true, slot, result };
  } finally {
    // Ends the transaction, which releases the advisory lock.
    await lockEm.rollback().catch(() => undefined);
  }
}
