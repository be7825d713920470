import type { Config } from '../config/config.ts';

/**
 * Where a stored object lives, as recorded on its row (`storage_location`): `fs` (the files below
 * DATA_DIR), `s3:<bucket>/<key prefix>` (e.g. `s3:media/` or `s3:media/service-a/`), or `db` (a
 * small media file's bytes in the database, src/storage/db/).
 *
 * An S3 location is its bucket and key prefix, not its endpoint: the same bucket reached through
 * another endpoint (a CDN origin, a new DNS name, a proxy) holds the same objects. The fs location is
 * not its directory either: DATA_DIR moves with the embedded database it also holds.
 */
export type StorageLocation = string;

export function fsLocation(): StorageLocation {
  return 'fs';
}

/** Small media files kept in the database beside their rows (DATABASE_FILE_MAX_BYTES). */
export function databaseLocation(): StorageLocation {
  return 'db';
}

/** Whether `location` is the database's, which every instance reaches wherever its object store is. */
export function isDatabaseLocation(location: StorageLocation | null): boolean {
  return location === databaseLocation();
}

export function s3Location(bucket: string, keyPrefix: string): StorageLocation {
  return `s3:${bucket}/${keyPrefix}`;
}

/** The location the settings write to (STORAGE_DRIVER, S3_BUCKET, S3_KEY_PREFIX). */
export function storageLocationOf(storage: Pick<Config['storage'], 'driver' | 's3'>): StorageLocation {
  return storage.driver === 'fs' ? fsLocation() : s3Location(storage.s3.bucket, storage.s3.keyPrefix);
}

export type ParsedLocation = { driver: 'fs' } | { driver: 'db' } | { driver: 's3'; bucket: string; keyPrefix: string };

export function parseStorageLocation(location: StorageLocation): ParsedLocation {
  if (location === 'fs') return { driver: 'fs' };
  if (location === 'db') return { driver: 'db' };
  const match = /^s3:([^/]+)\/(.*)$/.exec(location);
  if (!match) throw new Error(`not a storage location: ${JSON.stringify(location)}`);
  return { driver: 's3', bucket: match[1]!, keyPrefix: match[2]! };
}

/**
 * The storage settings that reach `location`: the driver, bucket and prefix of the location, the rest
 * (endpoint, region, credentials, part size) from `storage`, the settings the service reads.
 */
export function storageSettingsAt(location: StorageLocation, storage: Config['storage']): Config['storage'] {
  const parsed = parseStorageLocation(location);
  if (parsed.driver === 'db') throw new Error('the database location has no storage settings');
  if (parsed.driver === 'fs') return { ...storage, driver: 'fs' };
  return { ...storage, driver: 's3', s3: { ...storage.s3, bucket: parsed.bucket, keyPrefix: parsed.keyPrefix } };
}

/** For messages: `fs (DATA_DIR)` or `s3 bucket "media", prefix "a/"`. */
export function describeLocation(location: StorageLocation): string {
  const parsed = parseStorageLocation(location);
  if (parsed.driver === 'fs') return 'fs, the files below DATA_DIR';
  if (parsed.driver === 'db') return 'the database (small files)';
  return `s3 bucket "${parsed.bucket}"${parsed.keyPrefix ? ` under the key prefix "${parsed.keyPrefix}"` : ''}`;
}
