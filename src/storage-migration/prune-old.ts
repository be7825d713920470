import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../config/config.ts';
import type { ObjectStore } from '../storage/object-store.ts';
import { StoresByLocation } from '../storage/stores-by-location.ts';
import { thumbnailKeyOfMediaKey } from '../domain/media/thumbnail-links.ts';
import { CopyLedger } from './copy-ledger.ts';

export interface PruneSummary {
  /** The configured store's location: the copies made to it are the ones kept. */
  location: string;
  /** Old copies removed: their rows live in the configured store now. */
  removed: number;
  /** Copies whose row was deleted meanwhile, removed from both stores. */
  removedOrphans: number;
  /** Copies kept because their rows do not live in the configured store yet (the service has not started on it). */
  notSwitched: number;
  next: string | null;
}

/**
 * `storage prune-old`: after the switch, removes the objects `storage migrate` copied from their
 * old store. Only for rows that now live in the configured store (a service started on it and
 * moved them, storage-placement.ts), so it removes nothing a service on the old store could still
 * be reading, as long as every instance has been switched.
 */
export async function pruneOldCopies(options: { orm: MikroORM; config: Config; store: ObjectStore }): Promise<PruneSummary> {
  const { orm, config, store } = options;
  const ledger = new CopyLedger(orm, config.upload.databaseFileMaxBytes);
  const location = store.location;
  const stores = new StoresByLocation({ orm, config, configured: store });
  const storeAt = (at: string) => stores.at(at);
  try {
    const { moved, orphans } = await ledger.switched(location);
    for (const copy of moved) {
      const source = await storeAt(copy.source);
      await source.remove(copy.key);
      // Its thumbnail there too: the service makes it again in the configured store.
      const thumbnail = thumbnailKeyOfMediaKey(copy.key);
      if (thumbnail) await source.remove(thumbnail);
      // A copy made to the old store earlier (a move back and forth) is gone now too: a later run must copy it again.
      await ledger.forget(copy.source, copy.key);
      await ledger.forget(location, copy.key);
    }
    for (const copy of orphans) {
      await (await storeAt(copy.source)).remove(copy.key);
      await store.remove(copy.key);
      await ledger.forget(copy.source, copy.key);
      await ledger.forget(location, copy.key);
    }
    const notSwitched = await ledger.notSwitched(location);
    return {
      location,
      removed: moved.length,
      removedOrphans: orphans.length,
      notSwitched,
      next: notSwitched > 0
        ? `${notSwitched} copies were kept: their rows do not live in ${location} yet. Start the service on it first (it moves them), then run this again.`
        : null,
    };
  } finally {
    await stores.close();
  }
}
