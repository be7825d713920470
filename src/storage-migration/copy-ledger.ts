import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { STORED_OBJECT_TABLES, type StoredObjectKind } from '../domain/storage-locations/stored-objects.ts';

/** pg advisory lock of `storage migrate` and `storage prune-old`: one of them at a time (keys in use: src/jobs/jobs.ts). */
const STORAGE_MOVE_LOCK_KEY = 727_034;

/** A row that names a stored object, as a copy needs it. */
export interface StoredObjectRow {
  kind: StoredObjectKind;
  key: string;
  /** Null: written before locations were recorded (storage-placement.ts). */
  location: string | null;
  size: number;
  /** The content hash (content-hash.ts); null on media rows that have none. */
  hash: string | null;
  contentType: string;
  /** A copy of it was started by a run that did not finish it (killed): leftovers may exist at the target. */
  started: boolean;
}

/** A copy whose row is gone (deleted while the migration ran): its copy at the target is an orphan. */
export interface OrphanCopy {
  key: string;
  source: string;
  target: string;
}

const PAGE = 200;

/**
 * `storage_copy` (Migration20261128010000StorageLocations): what `storage migrate` copied where,
 * so a second run copies only what is not verified yet, and the start on the target moves rows
 * only with a verified copy.
 */
export class CopyLedger {
  private readonly orm: MikroORM;
  private readonly databaseFileMaxBytes: number;

  /**
   * `databaseFileMaxBytes` (DATABASE_FILE_MAX_BYTES): a small file in the database stays there (it is
   * where the service would put it now); one above it (the setting was lowered, or 0) is moved out.
   */
  constructor(orm: MikroORM, databaseFileMaxBytes: number) {
    this.orm = orm;
    this.databaseFileMaxBytes = databaseFileMaxBytes;
  }

  /** The rows to copy to `?` (the target): those living elsewhere, but for the small files that stay in the database. */
  private get movedRows(): string {
    return `t.storage_location is distinct from ? and not (coalesce(t.storage_location, '') = 'db' and t.size <= ${Number(this.databaseFileMaxBytes)})`;
  }

  /**
   * Runs `work` while holding the storage-move lock (a transaction-scoped advisory lock on a
   * connection of its own, released when the transaction ends, also when the process dies).
   * Resolves null without running it when another run holds the lock.
   */
  async exclusively<T>(work: () => Promise<T>): Promise<{ result: T } | null> {
    const lockEm = this.orm.em.fork();
    await lockEm.begin();
    try {
      const [lock] = await lockEm.execute<{ locked: boolean }[]>('select pg_try_advisory_xact_lock(?) as locked', [STORAGE_MOVE_LOCK_KEY]);
      if (!lock?.locked) return null;
      return { result: await work() };
    } finally {
      await lockEm.rollback().catch(() => undefined);
    }
  }

  /** How many rows live elsewhere than `target` and have no verified copy there, and how many have one. */
  async count(target: string): Promise<{ pending: number; verified: number }> {
    let pending = 0;
    let verified = 0;
    for (const { table } of STORED_OBJECT_TABLES) {
      const [row] = await this.em().execute<{ pending: string | number; verified: string | number }[]>(
        `select count(*) filter (where not coalesce(c.verified, false)) as pending, count(*) filter (where c.verified) as verified
           from ${table} t left join storage_copy c on c.target = ? and c.storage_key = t.storage_key
          where ${this.movedRows}`,
        [target, target],
      );
      pending += Number(row?.pending ?? 0);
      verified += Number(row?.verified ?? 0);
    }
    return { pending, verified };
  }

  /** Every row, of every kind, living elsewhere than `target` without a verified copy there, a page at a time. */
  async *pending(target: string): AsyncGenerator<StoredObjectRow[]> {
    for (const { kind, table } of STORED_OBJECT_TABLES) {
      let after = '';
      for (;;) {
        const rows = await this.em().execute<{
          storage_key: string; storage_location: string | null; size: string | number; hash: string | null; content_type: string; started: boolean;
        }[]>(
          `select t.storage_key, t.storage_location, t.size, t.hash, t.content_type, c.storage_key is not null as started
             from ${table} t left join storage_copy c on c.target = ? and c.storage_key = t.storage_key
            where ${this.movedRows} and not coalesce(c.verified, false) and t.storage_key > ?
            order by t.storage_key limit ${PAGE}`,
          [target, target, after],
        );
        if (rows.length === 0) break;
        after = rows[rows.length - 1]!.storage_key;
        yield rows.map((row) => ({
          kind, key: row.storage_key, location: row.storage_location, size: Number(row.size), hash: row.hash, contentType: row.content_type, started: row.started,
        }));
      }
    }
  }

  /** Whether the row naming `key` still exists (a read of its object failed: deleted meanwhile, or lost). */
  async rowExists(kind: StoredObjectKind, key: string): Promise<boolean> {
    const { table } = STORED_OBJECT_TABLES.find((entry) => entry.kind === kind)!;
    const rows = await this.em().execute<{ found: number }[]>(`select 1 as found from ${table} where storage_key = ?`, [key]);
    return rows.length > 0;
  }

  /** Before the first byte: the copy is under way (a run killed now leaves this to clean up). */
  async begin(target: string, row: StoredObjectRow, source: string): Promise<void> {
    await this.em().execute(
      `insert into storage_copy (target, storage_key, source, kind, verified, updated_at) values (?, ?, ?, ?, false, now())
       on conflict (target, storage_key) do update set source = excluded.source, verified = false, updated_at = now()`,
      [target, row.key, source, row.kind],
    );
  }

  async verified(target: string, key: string, copy: { size: number; hash: string }): Promise<void> {
    await this.em().execute(
      'update storage_copy set verified = true, size = ?, hash = ?, updated_at = now() where target = ? and storage_key = ?',
      [copy.size, copy.hash, target, key],
    );
  }

  async forget(target: string, key: string): Promise<void> {
    await this.em().execute('delete from storage_copy where target = ? and storage_key = ?', [target, key]);
  }

  /** Copies at `target` whose row is gone. */
  async orphans(target: string): Promise<OrphanCopy[]> {
    return this.copiesWhere('c.target = ? and not exists (select 1 from stored_keys s where s.storage_key = c.storage_key)', [target]);
  }

  /**
   * After the switch: copies at `target` (the configured store) whose row now lives there, so that
   * their `source` holds a copy nobody reads; and copies whose row is gone.
   */
  async switched(target: string): Promise<{ moved: OrphanCopy[]; orphans: OrphanCopy[] }> {
    const moved = await this.copiesWhere(
      'c.target = ? and c.verified and exists (select 1 from stored_keys s where s.storage_key = c.storage_key and s.storage_location = c.target)',
      [target],
    );
    return { moved, orphans: await this.orphans(target) };
  }

  /** Verified copies at `target` whose row does not live there yet (the service has not been switched). */
  async notSwitched(target: string): Promise<number> {
    const [row] = await this.em().execute<{ count: string | number }[]>(
      `${STORED_KEYS} select count(*) as count from storage_copy c
        where c.target = ? and exists (select 1 from stored_keys s where s.storage_key = c.storage_key and s.storage_location is distinct from c.target)`,
      [target],
    );
    return Number(row?.count ?? 0);
  }

  private async copiesWhere(condition: string, params: unknown[]): Promise<OrphanCopy[]> {
    const rows = await this.em().execute<{ storage_key: string; source: string; target: string }[]>(
      `${STORED_KEYS} select c.storage_key, c.source, c.target from storage_copy c where ${condition} order by c.storage_key`,
      params,
    );
    return rows.map((row) => ({ key: row.storage_key, source: row.source, target: row.target }));
  }

  private em(): EntityManager {
    return this.orm.em.fork();
  }
}

/** Every stored object's key and location, of every kind. */
const STORED_KEYS = `with stored_keys as (${STORED_OBJECT_TABLES.map(({ table }) => `select storage_key, storage_location from ${table}`).join(' union all ')})`;
