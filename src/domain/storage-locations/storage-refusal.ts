import { ConfigError, type Config } from '../../config/config.ts';
import { describeLocation, parseStorageLocation, storageLocationOf, storageSettingsAt } from '../../storage/storage-location.ts';
import type { Placement } from './storage-placement.ts';

/** The command the refusal names (fixed: API-ADDITIONS.md). */
export function migrateCommand(driver: 'fs' | 's3'): string {
  return `npm run cli -- storage migrate --to ${driver}`;
}

export const FORGET_MISSING_COMMAND = 'npm run cli -- storage forget-missing';

/**
 * The setting that sends the service to a store that does not hold its objects: the driver when the
 * drivers differ, else the bucket, else the key prefix.
 */
function settingAtFault(configured: Config['storage'], other: string | null): string {
  if (other === null) return 'STORAGE_DRIVER';
  const parsed = parseStorageLocation(other);
  if (parsed.driver !== configured.driver) return 'STORAGE_DRIVER';
  if (parsed.driver === 's3' && parsed.bucket !== configured.s3.bucket) return 'S3_BUCKET';
  return 'S3_KEY_PREFIX';
}

function settingValue(storage: Config['storage'], setting: string): string {
  if (setting === 'S3_BUCKET') return storage.s3.bucket;
  if (setting === 'S3_KEY_PREFIX') return storage.s3.keyPrefix;
  return storage.driver;
}

/**
 * The start-up refusal when the configured store does not hold every stored object (placement's
 * `elsewhere`), or null when it does. A ConfigError: printed as the other invalid settings are.
 */
export function storageRefusal(placement: Placement, storage: Config['storage']): ConfigError | null {
  if (placement.elsewhere.length === 0) return null;
  const total = placement.elsewhere.reduce((sum, entry) => sum + entry.count, 0);
  const main = placement.elsewhere[0]!;
  const setting = settingAtFault(storage, main.location);
  const where = placement.elsewhere
    .map((entry) => (entry.location === null
      ? `${entry.count} written before storage locations were recorded and not found in ${describeLocation(storageLocationOf(storage))}, such as ${placement.unfound.join(', ')}`
      : `${entry.count} in ${describeLocation(entry.location)}`))
    .join('; ');
  const lost = placement.elsewhere.some((entry) => entry.location === null)
    ? ` Objects lost in every store keep it refusing: \`${FORGET_MISSING_COMMAND} --dry-run\` lists them, without --dry-run it deletes their rows.`
    : '';
  const back = main.location === null ? '' : ` Or set ${setting} back to ${JSON.stringify(settingValue(storageSettingsAt(main.location, storage), setting))}.`;
  return new ConfigError(
    `Invalid configuration: ${setting}=${JSON.stringify(settingValue(storage, setting))} names a store that does not hold ${total} of the service's stored objects (${where}). ` +
      `Copy them there with \`${migrateCommand(storage.driver)}\` (the service may keep running on the old store meanwhile), then start again; ` +
      `docs/operations.md, "Moving storage between drivers", has the steps.${lost}${back}`,
  );
}

