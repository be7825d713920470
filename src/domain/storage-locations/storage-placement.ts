import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../../logging/logger.ts';
import type { ObjectStore } from '../../storage/object-store.ts';
import { sqlList, STORED_OBJECT_TABLES } from './stored-objects.ts';

/** Rows whose objects are stat-ed at once while claiming (each stat is one request on S3). */
const CLAIM_CONCURRENCY = 16;
const CLAIM_PAGE = 500;

export interface Placement {
  /** The configured store's location. */
  location: string;
  /** Rows written before locations were recorded, found in the configured store and so recorded there now. */
  claimed: number;
  /** Rows moved here because `storage migrate` left a verified copy here. */
  moved: number;
  /** Rows that live elsewhere, by location; `null`: unrecorded and not found here. Empty: the store holds every object. */
  elsewhere: { location: string | null; count: number }[];
  /** A few keys of the unrecorded rows not found here, for the operator to look for. */
  unfound: string[];
}

export interface PlacementOptions {
  orm: MikroORM;
  store: ObjectStore;
  logger: Pick<Logger, 'info' | 'warn'>;
  /** False when the storage did not answer at start-up: unrecorded rows are then left for the next start. */
  storageReachable: boolean;
}

/**
 * At start-up, before any request: makes sure the configured store holds every stored object, as
 * the rows record it (`storage_location`, Migration20261128010000StorageLocations).
 *
 * 1. Claim: a row with no location (written before locations were recorded) is recorded in the
 *    configured store when its object is there with the row's size (a stat each, once per row
 *    ever). One not found keeps no location and counts as elsewhere: it was written to another
 *    store, or is lost.
 * 2. Switch: in one transaction, every row with a verified copy here (`storage_copy`, written by
 *    `storage migrate`) is recorded here; then the rows recorded elsewhere are counted (not those
 *    in the database, `db`, which every instance reaches wherever its store is). If there
 *    are any, the transaction rolls back (a service still on the old store keeps finding its
 *    rows) and the caller refuses to start. So a row moves only with its verified copy, and only
 *    when every row can move.
 *
 * Safe to run on several instances or service processes at once: every write is idempotent.
 */
export async function placeStoredObjects(options: PlacementOptions): Promise<Placement> {
  const { orm, store, logger } = options;
  const location = store.location;
  let claimed = 0;
  let claimComplete = options.storageReachable;
  if (claimComplete) {
    try {
      for (const { table } of STORED_OBJECT_TABLES) claimed += await claimUnrecorded(orm, store, table);
    } catch (error) {
      // The storage went away while claiming: what is left is claimed at the next start.
      logger.warn({ err: error }, 'claiming the stored objects of rows without a location stopped; the next start goes on');
      claimComplete = false;
    }
  }
  if (claimed > 0) logger.info({ claimed, location }, 'recorded the location of stored objects written before locations were recorded');

  try {
    return await orm.em.fork().transactional(async (em) => {
      let moved = 0;
      for (const { table } of STORED_OBJECT_TABLES) {
        // Thumbnails are not copied: a moved image's thumbnail is made again in the new store.
        // Nor resized images: made again in the new store on their next request (the old store's are left there).
        if (table === 'media_file') {
          await em.execute(
            `delete from media_transform mt using media_file t, storage_copy c
              where mt.media_id = t.id and c.target = ? and c.verified and c.storage_key = t.storage_key and t.storage_location is distinct from ?`,
            [location, location],
          );
        }
        const thumbnails = table === 'media_file'
          ? `, thumbnail_status = case when t.thumbnail_status = 'ready' then 'pending' else t.thumbnail_status end, thumbnail_attempts = 0`
          : '';
        const updated = await em.execute(
          `update ${table} t set storage_location = ?${thumbnails}
             from storage_copy c
            where c.target = ? and c.verified and c.storage_key = t.storage_key and t.storage_location is distinct from ?`,
          [location, location, location],
          'run',
        );
        moved += (updated as { affectedRows?: number }).affectedRows ?? 0;
      }
      const counts = new Map<string | null, number>();
      for (const { table } of STORED_OBJECT_TABLES) {
        const rows = await em.execute<{ storage_location: string | null; count: string | number }[]>(
          `select storage_location, count(*) as count from ${table}
            where storage_location is distinct from ? and storage_location is distinct from 'db'${claimComplete ? '' : ' and storage_location is not null'}
            group by storage_location`,
          [location],
        );
        for (const row of rows) counts.set(row.storage_location, (counts.get(row.storage_location) ?? 0) + Number(row.count));
      }
      const elsewhere = [...counts].map(([at, count]) => ({ location: at, count })).sort((a, b) => b.count - a.count);
      // Nothing moves unless everything can: the throw rolls the switch back.
      if (elsewhere.length > 0) throw new NotAllHere(elsewhere, counts.has(null) ? await unfoundKeys(em) : []);
      if (moved > 0) logger.info({ moved, location }, 'stored objects now served from their verified copies in the configured store');
      return { location, claimed, moved, elsewhere, unfound: [] };
    });
  } catch (error) {
    if (error instanceof NotAllHere) return { location, claimed, moved: 0, elsewhere: error.elsewhere, unfound: error.unfound };
    throw error;
  }
}

const UNFOUND_SHOWN = 3;

async function unfoundKeys(em: EntityManager): Promise<string[]> {
  const rows = await em.execute<{ storage_key: string }[]>(
    `${STORED_OBJECT_TABLES.map(({ table }) => `(select storage_key from ${table} where storage_location is null order by storage_key limit ${UNFOUND_SHOWN})`).join(' union all ')}
     order by storage_key limit ${UNFOUND_SHOWN}`,
  );
  return rows.map((row) => row.storage_key);
}

class NotAllHere extends Error {
  readonly elsewhere: Placement['elsewhere'];
  readonly unfound: string[];

  constructor(elsewhere: Placement['elsewhere'], unfound: string[]) {
    super('stored objects live elsewhere');
    this.elsewhere = elsewhere;
    this.unfound = unfound;
  }
}

async function claimUnrecorded(orm: MikroORM, store: ObjectStore, table: string): Promise<number> {
  const em = orm.em.fork();
  let after = '';
  let claimed = 0;
  for (;;) {
    const rows = await em.execute<{ storage_key: string; size: string | number }[]>(
      `select storage_key, size from ${table} where storage_location is null and storage_key > ? order by storage_key limit ${CLAIM_PAGE}`,
      [after],
    );
    if (rows.length === 0) return claimed;
    after = rows[rows.length - 1]!.storage_key;
    const found: string[] = [];
    for (let index = 0; index < rows.length; index += CLAIM_CONCURRENCY) {
      await Promise.all(rows.slice(index, index + CLAIM_CONCURRENCY).map(async (row) => {
        const info = await store.stat(row.storage_key);
        if (info && info.size === Number(row.size)) found.push(row.storage_key);
      }));
    }
    if (found.length > 0) {
      const updated = await em.execute(
        `update ${table} set storage_location = ? where storage_location is null and storage_key = any(string_to_array(?, ','))`,
        [store.location, sqlList(found)],
        'run',
      );
      claimed += (updated as { affectedRows?: number }).affectedRows ?? 0;
    }
  }
}
