import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../config/config.ts';
import { STORED_OBJECT_TABLES, sqlList, type StoredObjectKind } from '../domain/storage-locations/stored-objects.ts';
import { TEAM_FILES, TODO_FILES } from '../domain/team-files/file-kinds.ts';
import { recordTeamLog } from '../domain/team-logs/team-log.service.ts';
import { serviceUnavailable } from '../errors/errors.ts';
import type { Logger } from '../logging/logger.ts';
import { StoresByLocation } from '../storage/stores-by-location.ts';
import type { ObjectStore } from '../storage/object-store.ts';
import { describeStorageFailure } from '../storage/storage-health.ts';
import { describeLocation, storageLocationOf, storageSettingsAt } from '../storage/storage-location.ts';
import { CopyLedger, type StoredObjectRow } from './copy-ledger.ts';

/** Objects stat-ed at once (each stat is one request on S3). */
const STAT_CONCURRENCY = 16;

/** The log action of a forgotten team or to-do file; media have none, as when deleted through the API. */
const DELETED_ACTION = { 'team-file': TEAM_FILES.deleted, 'todo-file': TODO_FILES.deleted } as const;

export interface MissingObject {
  kind: StoredObjectKind;
  key: string;
  /** Where its row says it lives; null: written before locations were recorded. */
  location: string | null;
  size: number;
}

export interface ForgetSummary {
  /** The configured store's location. */
  location: string;
  /** Rows that do not live in the configured store and have no verified copy there: the ones a start refuses for. */
  checked: number;
  /** Of those, rows whose object was found where they live (a start refuses for them until `storage migrate` copies them). */
  found: number;
  /** Rows whose object is in none of the stores looked in. */
  missing: MissingObject[];
  /** Rows deleted (0 with --dry-run): their bytes given back to their teams' storage. */
  forgotten: number;
  dryRun: boolean;
  next: string | null;
}

export interface ForgetOptions {
  orm: MikroORM;
  config: Config;
  /** The configured store. */
  store: ObjectStore;
  /** Only report. */
  dryRun: boolean;
  /** Look for rows without a location in the configured store only, not also in the other driver's. */
  onlyHere: boolean;
  logger: Pick<Logger, 'warn'>;
}

/**
 * `storage forget-missing [--dry-run] [--only-here]`: deletes the rows whose object is lost in every
 * store, so that a start no longer refuses for them (storage-placement.ts) and their teams get their
 * bytes back. Looks only at the rows a start would refuse for (living elsewhere than the configured
 * store, with no verified copy here), each in the store its row names; a row written before
 * locations were recorded, in the configured store and the other driver's (where a service on the
 * other driver wrote it), unless `onlyHere`.
 *
 * A row is forgotten only when every store it may live in answered "not found": a store that does not
 * answer stops the command (503) before anything is deleted. Team and to-do files leave a
 * TEAM_FILE_DELETED / TODO_FILE_DELETED entry in their team's log, by the operator.
 */
export async function forgetMissing(options: ForgetOptions): Promise<ForgetSummary> {
  const { orm, config, store, dryRun, onlyHere, logger } = options;
  const location = store.location;
  const otherLocation = storageLocationOf({ ...config.storage, driver: config.storage.driver === 'fs' ? 's3' : 'fs' });
  const stores = new StoresByLocation({ orm, config, configured: store });
  const storeAt = (at: string) => stores.at(at);
  const lookIn = async (at: string, row: StoredObjectRow): Promise<boolean> => {
    try {
      return (await (await storeAt(at)).stat(row.key)) !== null;
    } catch (error) {
      const { cause } = describeStorageFailure(error, storageSettingsAt(at, config.storage));
      const hint = row.location === null && at !== location
        ? ` It holds rows written before storage locations were recorded if a service ever ran on it; if none did, run again with --only-here.`
        : '';
      throw serviceUnavailable(`${describeLocation(at)} did not answer for ${row.key} (${cause}); nothing was forgotten.${hint}`);
    }
  };

  try {
    const summary: ForgetSummary = { location, checked: 0, found: 0, missing: [], forgotten: 0, dryRun, next: null };
    for await (const page of new CopyLedger(orm, config.upload.databaseFileMaxBytes).pending(location)) {
      for (let index = 0; index < page.length; index += STAT_CONCURRENCY) {
        await Promise.all(page.slice(index, index + STAT_CONCURRENCY).map(async (row) => {
          summary.checked += 1;
          const places = row.location !== null ? [row.location] : onlyHere ? [location] : [location, otherLocation];
          for (const place of places) {
            if (await lookIn(place, row)) {
              summary.found += 1;
              return;
            }
          }
          summary.missing.push({ kind: row.kind, key: row.key, location: row.location, size: row.size });
        }));
      }
    }
    summary.missing.sort((a, b) => a.key.localeCompare(b.key));
    if (!dryRun && summary.missing.length > 0) {
      summary.forgotten = await deleteRows(orm, location, summary.missing);
      for (const row of summary.missing) logger.warn({ ...row }, 'forgot a stored object lost in every store');
    }
    summary.next = nextStep(summary);
    return summary;
  } finally {
    await stores.close();
  }
}

function nextStep(summary: ForgetSummary): string | null {
  if (summary.missing.length > 0 && summary.dryRun) {
    return 'Run again without --dry-run to delete these rows (their files answer 404 today; their bytes go back to their teams).';
  }
  if (summary.found > 0) {
    return `${summary.found} objects live in another store: copy them here with \`npm run cli -- storage migrate --to ${summary.location === 'fs' ? 'fs' : 's3'}\`, then start.`;
  }
  return summary.forgotten > 0 ? 'No row lives elsewhere any more: the service starts on the configured store.' : null;
}

/**
 * In one transaction: deletes the rows (only while they still live elsewhere), their copy records,
 * and gives their sizes back to their teams. Answers how many rows were deleted.
 */
async function deleteRows(orm: MikroORM, location: string, missing: MissingObject[]): Promise<number> {
  return orm.em.fork().transactional(async (em) => {
    let deleted = 0;
    for (const { kind, table } of STORED_OBJECT_TABLES) {
      const keys = missing.filter((row) => row.kind === kind).map((row) => row.key);
      if (keys.length === 0) continue;
      const rows = await em.execute<{ id: string; team_id: string; size: string | number; file_name: string }[]>(
        `delete from ${table} where storage_key = any(string_to_array(?, ',')) and storage_location is distinct from ?
         returning id, team_id, size, file_name`,
        [sqlList(keys), location],
      );
      deleted += rows.length;
      await freeTeamStorage(em, rows);
      if (kind !== 'media') {
        for (const row of rows) {
          recordTeamLog(em, {
            teamId: row.team_id, action: DELETED_ACTION[kind], targetIdentifier: row.id,
            data: { fileName: row.file_name, size: Number(row.size), reason: 'lost in every store (storage forget-missing)' },
          });
        }
      }
    }
    await em.execute(`delete from storage_copy where storage_key = any(string_to_array(?, ','))`, [sqlList(missing.map((row) => row.key))]);
    await em.flush();
    return deleted;
  });
}

async function freeTeamStorage(em: EntityManager, rows: { team_id: string; size: string | number }[]): Promise<void> {
  const freed = new Map<string, number>();
  for (const row of rows) freed.set(row.team_id, (freed.get(row.team_id) ?? 0) + Number(row.size));
  for (const [teamId, bytes] of freed) {
    // The same conditional update as StorageQuota.free.
    await em.execute('update team set used_storage = greatest(used_storage - ?, 0) where id = ?', [bytes, teamId]);
  }
}
