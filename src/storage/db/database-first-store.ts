import { isStorageError, type ObjectInfo, type ObjectStore, type ObjectWriter, type OpenWriterOptions, type ReadOptions, type StaleUpload } from '../object-store.ts';
import { isDatabaseLocation, type StorageLocation } from '../storage-location.ts';
import { mediaIdOfKey, type DatabaseObjectStore } from './database-object-store.ts';

/**
 * The object store as the readers of media files see it (thumbnails, resized images, text previews,
 * backups): a media file kept in the database is read from there, anything else from the object
 * store, which also takes every write. A reader that knows the row's location (file serving) says
 * so with readAt() and saves the database's answer for a file that is not there.
 */
export class DatabaseFirstStore implements ObjectStore {
  private readonly database: DatabaseObjectStore;
  private readonly store: ObjectStore;

  constructor(store: ObjectStore, database: DatabaseObjectStore) {
    this.store = store;
    this.database = database;
  }

  get driver() {
    return this.store.driver;
  }

  get location() {
    return this.store.location;
  }

  /** The object at the location its row records. */
  readAt(location: StorageLocation | null, key: string, options?: ReadOptions) {
    return isDatabaseLocation(location) ? this.database.read(key, options) : this.store.read(key, options);
  }

  /** The object's file on this machine (see ObjectStore.localPath); null when it is in the database or the driver keeps no files. */
  localPathAt(location: StorageLocation | null, key: string): string | null {
    return isDatabaseLocation(location) ? null : (this.store.localPath?.(key) ?? null);
  }

  async read(key: string, options?: ReadOptions) {
    if (mediaIdOfKey(key) !== null) {
      try {
        return await this.database.read(key, options);
      } catch (error) {
        if (!isStorageError(error) || error.code !== 'not-found') throw error;
      }
    }
    return this.store.read(key, options);
  }

  async stat(key: string): Promise<ObjectInfo | null> {
    return (mediaIdOfKey(key) !== null ? await this.database.stat(key) : null) ?? this.store.stat(key);
  }

  openWriter(key: string, options: OpenWriterOptions): ObjectWriter {
    return this.store.openWriter(key, options);
  }

  /** The object store's copy: bytes in the database go with their row. */
  remove(key: string): Promise<void> {
    return this.store.remove(key);
  }

  checkAccess(): Promise<void> {
    return this.store.checkAccess();
  }

  listStaleUploads(olderThan: Date): Promise<StaleUpload[]> {
    return this.store.listStaleUploads(olderThan);
  }

  abortStaleUpload(upload: { key: string; uploadId: string }): Promise<void> {
    return this.store.abortStaleUpload(upload);
  }

  abortUploadsOf(key: string): Promise<number> {
    return this.store.abortUploadsOf(key);
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
