import type { Logger } from 'pino';
import type { Config } from '../config/config.ts';
import { StorageError, type ObjectStore } from './object-store.ts';

/**
 * Whether the object storage is usable, for start-up and /healthz.
 *
 * - At start-up, check() runs once. A refusal that points at a setting (no such bucket, unknown
 *   access key, wrong secret, no credentials, wrong region; an fs directory that cannot be written)
 *   is a configuration error: Application stops start-up with the message naming the setting.
 * - Storage that is not reached (connection refused, DNS, timeout, 5xx) is not: the service
 *   starts, /healthz answers 503 naming storage and the cause, the cause is logged, and the check
 *   repeats every STORAGE_CHECK_INTERVAL_SECONDS until it passes (and keeps running afterwards, so
 *   storage that goes away later is reported the same way).
 */

export interface StorageStatus {
  available: boolean;
  /** Why the storage is not usable; null while it is. */
  cause: string | null;
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

export class StorageHealth {
  private readonly store: ObjectStore;
  private readonly storage: Config['storage'];
  private readonly logger: Pick<Logger, 'info' | 'error'>;
  private current: StorageStatus = { available: false, cause: 'not checked yet', misconfigured: false };
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<StorageStatus> | null = null;

  constructor(options: StorageHealthOptions) {
    this.store = options.store;
    this.storage = options.storage;
    this.logger = options.logger;
  }

  get status(): StorageStatus {
    return this.current;
  }

  /** Checks once (a check already running is shared); logs when the state changes. */
  check(): Promise<StorageStatus> {
    this.running ??= this.runCheck().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async runCheck(): Promise<StorageStatus> {
    const before = this.current;
    let next: StorageStatus;
    try {
      await this.store.checkAccess();
      next = { available: true, cause: null, misconfigured: false };
    } catch (error) {
      next = { available: false, ...describeStorageFailure(error, this.storage) };
    }
    this.current = next;
    if (!next.available && (before.available || before.cause !== next.cause)) {
      this.logger.error({ driver: this.storage.driver, cause: next.cause }, 'storage unavailable');
    } else if (next.available && !before.available) {
      this.logger.info({ driver: this.storage.driver }, 'storage available');
    }
    return next;
  }

  /** Re-checks every STORAGE_CHECK_INTERVAL_SECONDS until stop(). */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.check(), this.storage.checkIntervalSeconds * 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
