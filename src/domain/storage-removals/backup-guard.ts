import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';

/**
 * Backups and object removals agree through one PostgreSQL advisory lock (docs/operations.md, "Backup
 * and restore"). A backup (src/backup/backup.ts) holds it exclusively from before its snapshot until
 * it has copied every file the snapshot's rows name. Whatever removes the object of a deleted row
 * (a media or team file deletion, the storage_deletion drain) does so inside a transaction holding it
 * shared; while a backup holds it, the removal is queued in storage_deletion instead, and the drain
 * (JOBS.storageDeletionDrain) removes the object once the backup is done. So no file a backup is
 * about to copy disappears under it, and deletions never wait for a backup.
 */
export const BACKUP_LOCK_KEY = 727002;

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

/**
 * Removes the objects of rows already deleted (committed): at once through `remove` (which handles its
 * own failures), or, while a backup runs, by queueing them for the drain.
 */
export async function removeDeletedObjects(orm: MikroORM, keys: string[], reason: string, remove: (key: string) => Promise<void>): Promise<void> {
  if (keys.length === 0) return;
  const removed = await whileNoBackup(orm, async () => {
    await Promise.all(keys.map(remove));
  });
  if (removed) return;
  await orm.em.fork().execute(
    `insert into storage_deletion (id, kind, storage_key, data, reason, created_at) values ${keys.map(() => `(gen_random_uuid(), 'object', ?, null, ?, now())`).join(', ')}`,
    keys.flatMap((key) => [key, reason]),
  );
}
