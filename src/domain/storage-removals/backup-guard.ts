import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';

/**
 * Backups and object removals agree through one PostgreSQL advisory lock (docs/operations.md, "Backup
 * and restore"). A backup (src/backup/backup.ts) holds it exclusively from before its snapshot until
 * it has copied every file the snapshot's rows name. Whatever removes the object of a deleted row
 * looks at it first: a media or team file deletion once its rows are deleted, the storage_deletion
 * drain for each batch (holding it shared). While a backup holds it, a deletion queues its objects
 * in storage_deletion instead, and the drain (JOBS.storageDeletionDrain) removes them once the backup
 * is done. So no file a backup is about to copy disappears under it, and deletions never wait for a
 * backup.
 */
/** Its own key: 727002 is the folder rule sweep's (src/jobs/jobs.ts lists the keys in use). */
export const BACKUP_LOCK_KEY = 727_035;

/**
 * Runs `work` in a transaction holding the backup lock shared, so no backup starts before it is done;
 * answers false without running it when a backup runs (or waits to run).
 */
export async function whileNoBackup(orm: MikroORM, work: (em: EntityManager) => Promise<void>): Promise<boolean> {
  return orm.em.fork().transactional(async (em) => {
    const [lock] = await em.execute<{ free: boolean }[]>('select pg_try_advisory_xact_lock_shared(?) as free', [BACKUP_LOCK_KEY]);
    if (!lock?.free) return false;
    await work(em);
    return true;
  });
}

/** Whether a backup holds the lock (or waits for it) at this moment. */
async function backupRunning(orm: MikroORM): Promise<boolean> {
  // An implicit transaction of one statement: the shared lock is released as soon as it is known to be free.
  const [lock] = await orm.em.fork().execute<{ free: boolean }[]>('select pg_try_advisory_xact_lock_shared(?) as free', [BACKUP_LOCK_KEY]);
  return !lock?.free;
}

/**
 * Removes the objects of rows already deleted (committed): at once through `remove` (which handles its
 * own failures), or, while a backup runs, by queueing them for the drain. The lock is only looked at,
 * not held while removing: the rows were deleted before the look, so a backup that starts after it
 * takes its snapshot without them and never asks for their files.
 */
export async function removeDeletedObjects(orm: MikroORM, keys: string[], reason: string, remove: (key: string) => Promise<void>): Promise<void> {
  if (keys.length === 0) return;
  if (!(await backupRunning(orm))) {
    await Promise.all(keys.map(remove));
    return;
  }
  await orm.em.fork().execute(
    `insert into storage_deletion (id, kind, storage_key, data, reason, created_at) values ${keys.map(() => `(gen_random_uuid(), 'object', ?, null, ?, now())`).join(', ')}`,
    keys.flatMap((key) => [key, reason]),
  );
}
