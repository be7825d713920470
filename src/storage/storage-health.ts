import type { Logger } from 'pino';
import type { Config } from '../config/config.ts';
import { StorageError, type ObjectStore } from './object-store.ts';
import { DependencyProbe, type DependencyStatus } from '../health/dependency-probe.ts';

/**
 * Whether the object storage is usable, for start-up and /healthz (a DependencyProbe: shared check, status, log on change, re-checks).
 *
 * - At start-up, check() runs once. A refusal that points at a setting (no such bucket, unknown
 *   access key, wrong secret, no credentials, wrong region; an fs directory that cannot be written)
 *   is a configuration error: Application stops start-up with the message naming the setting.
 * - Storage that is not reached (connection refused, DNS, timeout, 5xx) is not: the service
 *   starts, /healthz answers 503 naming storage and the cause, the cause is logged, and the check
 *   repeats every STORAGE_CHECK_INTERVAL_SECONDS until it passes (and keeps running afterwards, so
 *   storage that goes away later is reported the same way).
 */

export interface StorageStatus extends DependencyStatus {
  /** The cause is a setting to fix (see describeStorageFailure), not an outage to wait out. */
  misconfigured: boolean;
}

/** S3 error names that point at one setting, with what to say about it. */
const S3_SETTING_ERRORS: Record<string, (storage: Config['storage']) => string> = {
  NoSuchBucket: (s) => `S3_BUCKET: the bucket "${s.s3.bucket}" does not exist at ${endpointOf(s)}`,
  InvalidBucketName: (s) => `S3_BUCKET: "${s.s3.bucket}" is not a valid bucket name for ${endpointOf(s)}`,
  InvalidAccessKeyId: (s) => `S3_ACCESS_KEY_ID: the access key id is not known to ${endpointOf(s)}`,
  SignatureDoesNotMatch: (s) => `S3_SECRET_ACCESS_KEY: ${endpointOf(s)} refused the request signature; the secret does not match S3_ACCESS_KEY_ID`,
  CredentialsProviderError: () => 'S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY: both are unset and the AWS default credential chain found no credentials',
  AccessDenied: (s) => `S3_ACCESS_KEY_ID: these credentials may not list multipart uploads in the bucket "${s.s3.bucket}" (AccessDenied)`,
  AuthorizationHeaderMalformed: (s) => `S3_REGION: "${s.s3.region}" is not the region of the bucket "${s.s3.bucket}"`,
  PermanentRedirect: (s) => `S3_REGION: "${s.s3.region}" is not the region of the bucket "${s.s3.bucket}" (or set S3_ENDPOINT)`,
};

function endpointOf(storage: Config['storage']): string {
  return storage.s3.endpoint ?? 'AWS S3';
}

/** What a failed checkAccess() means: a sentence for the log, /healthz and start-up errors. */
export function describeStorageFailure(error: unknown, storage: Config['storage']): { cause: string; misconfigured: boolean } {
  const message = error instanceof Error ? error.message : String(error);
  if (!(error instanceof StorageError) || error.code !== 'failed') return { cause: message, misconfigured: false };
  if (storage.driver === 'fs') return { cause: `DATA_DIR: ${message}`, misconfigured: true };
  const name = (error.cause as { name?: string } | undefined)?.name ?? '';
  const describe = S3_SETTING_ERRORS[name];
  if (describe) return { cause: describe(storage), misconfigured: true };
  return { cause: `S3_ENDPOINT/S3_BUCKET: ${endpointOf(storage)} refused access to the bucket "${storage.s3.bucket}": ${message}`, misconfigured: true };
}

export interface StorageHealthOptions {
  store: ObjectStore;
  storage: Config['storage'];
  logger: Pick<Logger, 'info' | 'error'>;
}

export class StorageHealth extends DependencyProbe<StorageStatus> {
  private readonly store: ObjectStore;
  private readonly storage: Config['storage'];

  constructor(options: StorageHealthOptions) {
    super({
      name: 'storage',
      logger: options.logger,
      logFields: { driver: options.storage.driver },
      initial: { available: false, cause: 'not checked yet', misconfigured: false },
      // Re-checks every STORAGE_CHECK_INTERVAL_SECONDS until stop().
      recheckMs: options.storage.checkIntervalSeconds * 1000,
    });
    this.store = options.store;
    this.storage = options.storage;
  }

  protected async probe(): Promise<StorageStatus> {
    try {
      await this.store.checkAccess();
      return { available: true, cause: null, misconfigured: false };
    } catch (error) {
      return { available: false, ...describeStorageFailure(error, this.storage) };
    }
  }
}
