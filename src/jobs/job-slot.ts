import type { MikroORM } from '@mikro-orm/postgresql';

export interface JobSlotOptions {
  /** The job's name in job_run. */
  job: string;
  /** The pg advisory lock key of the job (migrations use 727001). */
  lockKey: number;
  /** The slot a run owns: the hour or the minute of its `now`. */
  unit: 'hour' | 'minute';
}

export type SlotRun<T> = { ran: true; slot: Date; result: T } | { ran: false };

/**
 * Runs `work` once per slot across every instance sharing the database: first a
 * transaction-scoped advisory lock (held on one connection for the whole run, so a slow run never
 * overlaps the next one), then the slot claimed in `job_run` with `insert ... on conflict do
 * nothing returning`. Only the instance whose insert returns a row runs; the others answer
 * `ran: false`. A claimed slot is not retried, even if its run failed: the next slot catches up.
 */
export async function runInJobSlot<T>(orm: MikroORM, options: JobSlotOptions, now: Date, work: (slot: Date) => Promise<T>): Promise<SlotRun<T>> {
  const lockEm = orm.em.fork();
  await lockEm.begin();
  try {
    const [lock] = await lockEm.execute<{ locked: boolean }[]>('select pg_try_advisory_xact_lock(?) as locked', [options.lockKey]);
    if (!lock?.locked) return { ran: false };
    const claimed = await orm.em.fork().execute<{ slot: Date }[]>(
      `insert into job_run (job, slot, started_at) values (?, date_trunc('${options.unit}', ?::timestamptz), now()) on conflict do nothing returning slot`,
      [options.job, now],
    );
    const slot = claimed[0]?.slot;
    if (!slot) return { ran: false };
    const result = await work(slot);
    await orm.em.fork().execute('update job_run set finished_at = now() where job = ? and slot = ?', [options.job, slot]);
    return { ran: true, slot, result };
  } finally {
    // Ends the transaction, which releases the advisory lock.
    await lockEm.rollback().catch(() => undefined);
  }
}
