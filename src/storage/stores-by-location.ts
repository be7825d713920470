import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../config/config.ts';
import { createObjectStore } from './create-object-store.ts';
import { DatabaseObjectStore } from './db/database-object-store.ts';
import type { ObjectStore } from './object-store.ts';
import { isDatabaseLocation, storageSettingsAt, type StorageLocation } from './storage-location.ts';

/**
 * The stores of the locations rows record, each opened once (the storage commands read and remove
 * at every location their rows name): the database's for `db`, otherwise the driver, bucket and
 * prefix of the location with the rest of the service's storage settings.
 */
export class StoresByLocation {
  private readonly opened = new Map<StorageLocation, Promise<ObjectStore>>();
  private readonly options: { orm: MikroORM; config: Config; configured?: ObjectStore };

  /** `configured`: the service's own store, already open (answered for its location, never closed here). */
  constructor(options: { orm: MikroORM; config: Config; configured?: ObjectStore }) {
    this.options = options;
  }

  at(location: StorageLocation): Promise<ObjectStore> {
    const { orm, config, configured } = this.options;
    if (configured && location === configured.location) return Promise.resolve(configured);
    let store = this.opened.get(location);
    if (!store) {
      store = isDatabaseLocation(location)
        ? Promise.resolve(new DatabaseObjectStore(orm))
        : createObjectStore(storageSettingsAt(location, config.storage), config.dataDir);
      this.opened.set(location, store);
    }
    return store;
  }

  async close(): Promise<void> {
    for (const store of this.opened.values()) await (await store).close().catch(() => undefined);
  }
}
