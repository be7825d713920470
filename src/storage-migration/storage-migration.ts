import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../config/config.ts';
import { badRequest, serviceUnavailable } from '../errors/errors.ts';
import type { Logger } from '../logging/logger.ts';
import { isStorageError } from '../storage/object-store.ts';
import { StoresByLocation } from '../storage/stores-by-location.ts';
import { describeStorageFailure } from '../storage/storage-health.ts';
import { storageLocationOf } from '../storage/storage-location.ts';
import type { XxHashApi } from '../uploads/hashing/content-hash.ts';
import { CopyLedger, type StoredObjectRow } from './copy-ledger.ts';
import { copyObject, hashStoredObject } from './object-copy.ts';
import type { CopyProgress } from './progress-display.ts';

/** Objects copied at once: enough to hide S3 latency, few enough for a service still serving from the source. */
const COPY_CONCURRENCY = 4;

export interface MigrationSummary {
  /** The target location (storage-location.ts). */
  to: string;
  /** Where the copied objects came from. */
  from: string[];
  /** Rows living elsewhere than the target when the run started (copied before or now, or not). */
  objects: number;
  /** Verified copies from earlier runs, not copied again. */
  alreadyCopied: number;
  /** Copied and verified by this run. */
  copied: number;
  bytesCopied: number;
  /** Copies whose row was deleted meanwhile, removed from the target. */
  removedOrphans: number;
  /** Objects whose row exists but which the source does not hold (lost, or in a store this run does not know). */
  missing: { kind: string; key: string; location: string | null }[];
  /** Objects that could not be copied or verified (the reason); the next run tries them again. */
  failed: { kind: string; key: string; reason: string }[];
  /** Rows still without a verified copy at the target when the run ended (failed, missing, or uploaded meanwhile). */
  remaining: number;
  /** True when every row has a verified copy at the target: the switch may happen. */
  complete: boolean;
  next: string;
}

export interface MigrationOptions {
  orm: MikroORM;
  config: Config;
  to: 'fs' | 's3';
  xxhash: XxHashApi;
  progress: CopyProgress;
  logger: Pick<Logger, 'warn'>;
}

/**
 * `storage migrate --to <driver>`: copies every stored object (media, team files, to-do files)
 * that lives elsewhere to the store the settings name for `to` (S3_* for s3, DATA_DIR for fs), while
 * the service keeps serving from where the objects are.
 *
 * - Sources are the rows' own locations; a row written before locations were recorded is read from
 *   the other driver's store (the one `to` is not), where the service wrote it.
 * - Each copy is recorded in storage_copy before its first byte and marked verified only after it
 *   was read back from the target with the row's size and content hash (the source's hash when a
 *   media row has none). A run killed at any point leaves unverified entries, whose leftovers the
 *   next run aborts before copying them again; verified ones are never copied again.
 * - Rows added meanwhile are copied by the next run; copies whose row was deleted meanwhile are removed.
 * - Nothing is served from the target until a service starts on it (storage-placement.ts).
 */
export async function migrateStorage(options: MigrationOptions): Promise<MigrationSummary> {
  const { orm, config, to, xxhash, progress, logger } = options;
  const targetSettings: Config['storage'] = { ...config.storage, driver: to };
  const targetLocation = storageLocationOf(targetSettings);
  const otherLocation = storageLocationOf({ ...config.storage, driver: to === 'fs' ? 's3' : 'fs' });
  const ledger = new CopyLedger(orm, config.upload.databaseFileMaxBytes);
  const stores = new StoresByLocation({ orm, config });
  const storeAt = (location: string) => stores.at(location);
  try {
    const target = await storeAt(targetLocation);
    await target.checkAccess().catch((error: unknown) => {
      const { cause, misconfigured } = describeStorageFailure(error, targetSettings);
      throw misconfigured ? badRequest(`The target store refused access: ${cause}`) : serviceUnavailable(`The target store is not reachable: ${cause}`);
    });
    const summary: MigrationSummary = {
      to: targetLocation, from: [], objects: 0, alreadyCopied: 0, copied: 0, bytesCopied: 0, removedOrphans: 0, missing: [], failed: [], remaining: 0, complete: false, next: '',
    };

    for (const orphan of await ledger.orphans(targetLocation)) {
      await target.remove(orphan.key);
      await ledger.forget(targetLocation, orphan.key);
      summary.removedOrphans += 1;
    }

    const { pending, verified } = await ledger.count(targetLocation);
    summary.objects = pending + verified;
    summary.alreadyCopied = verified;
    const sources = new Set<string>();
    progress.start(summary.objects, verified);

    const copyOne = async (row: StoredObjectRow): Promise<void> => {
      const sourceLocation = row.location ?? otherLocation;
      sources.add(sourceLocation);
      const source = await storeAt(sourceLocation);
      // A run killed during this copy may have left a temp file or a multipart upload: this run is the key's only writer at the target.
      if (row.started) await target.abortUploadsOf(row.key);
      await ledger.begin(targetLocation, row, sourceLocation);
      let copied;
      try {
        copied = await copyObject(source, target, row.key, { contentType: row.contentType, size: row.size, xxhash });
      } catch (error) {
        await ledger.forget(targetLocation, row.key);
        if (isStorageError(error) && error.code === 'not-found' && error.operation === 'read') {
          // Deleted since the page was read: nothing to copy. Otherwise the source does not hold it.
          if (await ledger.rowExists(row.kind, row.key)) summary.missing.push({ kind: row.kind, key: row.key, location: row.location });
          return;
        }
        throw error;
      }
      const expectedHash = row.hash ?? copied.sourceHash;
      const readBack = await hashStoredObject(target, row.key, xxhash);
      const problem = copied.size !== row.size
        ? `the source holds ${copied.size} bytes, the row says ${row.size}`
        : copied.sourceHash !== expectedHash
          ? `the source's content hash ${copied.sourceHash} is not the row's ${expectedHash}`
          : readBack.size !== row.size || readBack.hash !== expectedHash
            ? `the copy read back has ${readBack.size} bytes and hash ${readBack.hash}, expected ${row.size} and ${expectedHash}`
            : null;
      if (problem) {
        await target.remove(row.key);
        await ledger.forget(targetLocation, row.key);
        summary.failed.push({ kind: row.kind, key: row.key, reason: problem });
        return;
      }
      await ledger.verified(targetLocation, row.key, readBack);
      summary.copied += 1;
      summary.bytesCopied += readBack.size;
      progress.advance(readBack.size);
    };

    for await (const page of ledger.pending(targetLocation)) {
      for (let index = 0; index < page.length; index += COPY_CONCURRENCY) {
        await Promise.all(page.slice(index, index + COPY_CONCURRENCY).map(async (row) => {
          try {
            await copyOne(row);
          } catch (error) {
            logger.warn({ err: error, key: row.key }, 'copy failed');
            summary.failed.push({ kind: row.kind, key: row.key, reason: (error as Error).message });
          }
        }));
      }
    }
    progress.end();

    summary.from = [...sources].sort();
    summary.remaining = (await ledger.count(targetLocation)).pending;
    summary.complete = summary.remaining === 0;
    summary.next = summary.complete
      ? `Every object has a verified copy in ${targetLocation}. To switch: stop every instance, run this command once more (it copies only what was uploaded meanwhile), ` +
        `set STORAGE_DRIVER=${to} and start; then remove the old copies with \`npm run cli -- storage prune-old\`.`
      : summary.failed.length + summary.missing.length > 0
        ? 'Some objects are not copied (see failed and missing); fix the cause and run this command again: it goes on where it stopped.'
        : `${summary.remaining} objects were uploaded while this run copied: run it again to copy them.`;
    return summary;
  } finally {
    await stores.close();
  }
}
