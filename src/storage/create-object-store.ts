import path from 'node:path';
import type { Config } from '../config/config.ts';
import { FsObjectStore } from './fs/fs-object-store.ts';
import { FsResumableStore } from './fs/fs-resumable-store.ts';
import type { ObjectStore } from './object-store.ts';
import type { ResumableStore } from './resumable-store.ts';
import type { S3ObjectStore } from './s3/s3-object-store.ts';

/** The directory below DATA_DIR that holds the fs driver's objects. */
export const FILES_DIR = 'files';

/** What the service observes of a store. */
export interface ObjectStoreHooks {
  /** Every request the s3 driver sends, by operation (S3ObjectStoreOptions.onRequest). */
  onS3Request?: (operation: string) => void;
}

/**
 * Builds the configured store: `await createObjectStore(config.storage, config.dataDir)`. The s3
 * driver is imported only when configured: the AWS SDK alone adds ~30 MB of RSS to an fs service.
 */
export async function createObjectStore(storage: Config['storage'], dataDir: string, hooks: ObjectStoreHooks = {}): Promise<ObjectStore> {
  if (storage.driver === 's3') {
    const { S3ObjectStore } = await import('./s3/s3-object-store.ts');
    return new S3ObjectStore({ ...storage.s3, ...(hooks.onS3Request && { onRequest: hooks.onS3Request }) });
  }
  return new FsObjectStore({ root: path.join(dataDir, FILES_DIR) });
}

/** The resumable (tus) side of `store`: same directory, or same bucket, prefix and client. */
export function createResumableStore(store: ObjectStore): ResumableStore {
  if (store.driver === 's3') return (store as S3ObjectStore).resumable();
  return new FsResumableStore({ root: (store as FsObjectStore).root });
}
