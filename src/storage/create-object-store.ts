import path from 'node:path';
import type { Config } from '../config/config.ts';
import { FsObjectStore } from './fs/fs-object-store.ts';
import type { ObjectStore } from './object-store.ts';
import { S3ObjectStore } from './s3/s3-object-store.ts';

/** The directory below DATA_DIR that holds the fs driver's objects. */
export const FILES_DIR = 'files';

/** Builds the configured store: `createObjectStore(config.storage, config.dataDir)`. */
export function createObjectStore(storage: Config['storage'], dataDir: string): ObjectStore {
  if (storage.driver === 's3') return new S3ObjectStore({ ...storage.s3 });
  return new FsObjectStore({ root: path.join(dataDir, FILES_DIR) });
}
