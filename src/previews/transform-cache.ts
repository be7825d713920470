import type { MikroORM } from '@mikro-orm/postgresql';

/** A cached variant of a media file (Migration20261129010000ImageTransforms). */
export interface CachedTransform {
  storageKey: string;
  size: number;
}

export interface NewTransform extends CachedTransform {
  mediaId: string;
  teamId: string;
  variant: string;
}

/**
 * The index of the resized images kept in storage (`media_transform`), shared by every instance:
 * what is cached, its size, and when it was last served, for the least recently used eviction.
 * The objects are the caller's: this only says which keys to read or remove.
 */
export class TransformCache {
  private readonly orm: MikroORM;

  constructor(orm: MikroORM) {
    this.orm = orm;
  }

  /** The cached variant, marked used now; null when it is not cached. */
  async use(mediaId: string, variant: string): Promise<CachedTransform | null> {
    const rows = await this.orm.em.fork().execute<{ storage_key: string; size: number }[]>(
      'update media_transform set last_used_at = now() where media_id = ? and variant = ? returning storage_key, size',
      [mediaId, variant],
    );
    const row = rows[0];
    return row ? { storageKey: row.storage_key, size: Number(row.size) } : null;
  }

  /**
   * Records a stored variant: `recorded`, or `gone` when its file (or team) was deleted meanwhile
   * (the object is the caller's to remove: the deletion did not see it). A row locked by a
   * deletion makes this wait for it, so a deletion never misses a variant recorded under it.
   */
  async record(entry: NewTransform): Promise<'recorded' | 'gone'> {
    try {
      const rows = await this.orm.em.fork().execute<{ media_id: string }[]>(
        `insert into media_transform (media_id, team_id, variant, storage_key, size, created_at, last_used_at)
         select id, team_id, ?, ?, ?, now(), now() from media_file where id = ? and team_id = ?
         on conflict (media_id, variant) do update set storage_key = excluded.storage_key, size = excluded.size, last_used_at = now()
         returning media_id`,
        [entry.variant, entry.storageKey, entry.size, entry.mediaId, entry.teamId],
      );
      return rows.length > 0 ? 'recorded' : 'gone';
    } catch (error) {
      // foreign_key_violation: the file's row went between the select and the insert's check (MikroORM keeps the code).
      if ((error as { code?: unknown }).code === '23503') return 'gone';
      throw error;
    }
  }

  /** A cached variant whose object is missing (evicted by another instance meanwhile, or lost): its row goes. */
  async forget(mediaId: string, variant: string, storageKey: string): Promise<void> {
    await this.orm.em.fork().execute('delete from media_transform where media_id = ? and variant = ? and storage_key = ?', [mediaId, variant, storageKey]);
  }

  /**
   * Deletes the least recently used variants beyond `budgetBytes` in one statement and answers
   * their keys (the caller removes the objects, after the rows). Instances evicting at once never
   * answer the same row twice: the second delete waits for the first's row locks, then skips the
   * rows it deleted.
   */
  async evict(budgetBytes: number): Promise<string[]> {
    const rows = await this.orm.em.fork().execute<{ storage_key: string }[]>(
      `with ranked as (
         select media_id, variant, sum(size) over (order by last_used_at desc, media_id desc, variant desc) as kept
           from media_transform
       )
       delete from media_transform t using ranked r
        where r.kept > ? and t.media_id = r.media_id and t.variant = r.variant
       returning t.storage_key`,
      [budgetBytes],
    );
    return rows.map((row) => row.storage_key);
  }
}
