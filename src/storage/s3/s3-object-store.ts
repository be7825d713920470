// The `s3` driver: any S3-compatible endpoint (AWS S3, Ceph RGW, ...), through @aws-sdk/client-s3.
//
// Writing is S3ObjectWriter's (s3-object-writer.ts): one PutObject or a multipart upload from part
// buffers it reuses, and its clean-up on abort.
//
// Part size: 5 MiB by default (S3's minimum); grown, in whole MiB, for an `expectedSize` that
// would need more than 9,000 parts, so the upload stays below S3's 10,000-part limit with
// headroom if the body turns out somewhat larger than announced (a 250 MB video takes 48 parts).
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';
import { StorageError, assertValidKey, checkRange, isValidKey } from '../object-store.ts';
import type { ObjectInfo, ObjectStore, ObjectWriter, OpenWriterOptions, ReadOptions, StaleUpload } from '../object-store.ts';
import { httpStatusOf, isNotFound, wrap, type SdkErrorShape } from './s3-errors.ts';
import { S3ResumableStore } from './s3-resumable-store.ts';
import { s3Location } from '../storage-location.ts';
import { abortMultipartUpload, S3ObjectWriter } from './s3-object-writer.ts';
import { PartBufferPool } from './part-sink.ts';

export interface S3ObjectStoreOptions {
  /** Null for AWS S3 itself; otherwise the endpoint URL, e.g. http://127.0.0.1:7480. */
  endpoint: string | null;
  region: string;
  bucket: string;
  /** Null (both) to use the SDK's default credential chain (environment, instance role, ...). */
  accessKeyId: string | null;
  secretAccessKey: string | null;
  forcePathStyle: boolean;
  /**
   * Prepended to every key (default ''), e.g. 'media-service/'. The sweeper only lists multipart
   * uploads under it, so give the service its own prefix when the bucket is shared.
   */
  keyPrefix?: string;
  /** Minimum part size in bytes (default 5 MiB, at least 5 MiB). */
  partSize?: number;
  /** Parts uploaded in parallel per writer (default 1). */
  queueSize?: number;
  /** Connections kept per endpoint (default 64); requests beyond wait for a free socket. */
  maxSockets?: number;
  /** Attempts per request, including the first (default 3). */
  maxAttempts?: number;
  /** Called for every request sent to S3, each retry included, with its operation (PutObject, UploadPart, ...). */
  onRequest?: (operation: string) => void;
}

const MiB = 1024 * 1024;
export const MIN_PART_SIZE = 5 * MiB;
export const DEFAULT_PART_SIZE = 5 * MiB;
const MAX_PART_SIZE = 5 * 1024 * MiB;
/** S3 allows 10,000 parts; aim for 9,000 so a body larger than announced still fits. */
const TARGET_MAX_PARTS = 9_000;
export const DEFAULT_QUEUE_SIZE = 1;
const DEFAULT_MAX_SOCKETS = 64;
/** checkAccess() gives up after this (the client's own timeouts are sized for 8 MiB parts). */
const CHECK_TIMEOUT_MS = 10_000;

export function choosePartSize(minimum: number, expectedSize?: number): number {
  let size = Math.max(MIN_PART_SIZE, minimum);
  if (expectedSize !== undefined && Number.isFinite(expectedSize) && expectedSize > 0) {
    const needed = Math.ceil(expectedSize / TARGET_MAX_PARTS);
    if (needed > size) size = Math.ceil(needed / MiB) * MiB;
  }
  return Math.min(size, MAX_PART_SIZE);
}

/** AWS itself (no endpoint) is reached over HTTPS. */
function endpointUsesTls(endpoint: string | null): boolean {
  return endpoint === null || new URL(endpoint).protocol === 'https:';
}

/** The header SigV4 signs in place of the body's SHA-256 when it is given: the signer then does not hash. */
const PAYLOAD_HASH_HEADER = 'x-amz-content-sha256';
const BODY_COMMANDS = new Set(['PutObjectCommand', 'UploadPartCommand']);

/**
 * Over TLS, object bodies are sent as `UNSIGNED-PAYLOAD`: TLS already protects their bytes, and the
 * SDK would otherwise hash every Buffer body for the signature on the main thread (SHA-256, ~1 s of
 * CPU per GB: docs/performance.md). Over plain HTTP the signed hash is the only integrity check S3
 * makes, so there it stays. A build-step middleware runs before the signer, which then takes the
 * header as the payload's hash.
 */
function signPayloadsByTls(client: S3Client): void {
  client.middlewareStack.add(
    (next, context) => (args) => {
      const request = args.request as { headers?: Record<string, string> };
      if (BODY_COMMANDS.has(context.commandName ?? '') && request.headers) request.headers[PAYLOAD_HASH_HEADER] = 'UNSIGNED-PAYLOAD';
      return next(args);
    },
    { step: 'build', name: 'unsignedPayloadOverTls' },
  );
}

/**
 * Reports every request the client sends. A low-priority finalizeRequest middleware runs inside the
 * SDK's retry middleware (high priority, same step), so each attempt is counted: what S3 bills.
 */
function countRequests(client: S3Client, onRequest: (operation: string) => void): void {
  client.middlewareStack.add(
    (next, context) => (args) => {
      onRequest(context.commandName?.replace(/Command$/, '') ?? 'unknown');
      return next(args);
    },
    { step: 'finalizeRequest', priority: 'low', name: 'countRequests' },
  );
}

export class S3ObjectStore implements ObjectStore {
  readonly driver = 's3' as const;
  readonly location: string;
  readonly bucket: string;
  readonly keyPrefix: string;
  readonly partSize: number;
  readonly queueSize: number;
  readonly #client: S3Client;
  readonly #partBuffers: PartBufferPool;

  constructor(options: S3ObjectStoreOptions) {
    const prefix = options.keyPrefix ?? '';
    if (prefix !== '' && !/^[A-Za-z0-9/_.-]{1,256}$/.test(prefix)) {
      throw new StorageError(`Invalid key prefix ${JSON.stringify(prefix)}`, { code: 'invalid-key', operation: 'configure' });
    }
    if ((options.accessKeyId === null) !== (options.secretAccessKey === null)) {
      throw new StorageError('Give both the S3 access key id and the secret, or neither', { code: 'failed', operation: 'configure' });
    }
    this.bucket = options.bucket;
    this.keyPrefix = prefix;
    this.location = s3Location(options.bucket, prefix);
    this.partSize = Math.max(MIN_PART_SIZE, options.partSize ?? DEFAULT_PART_SIZE);
    this.queueSize = Math.max(1, Math.floor(options.queueSize ?? DEFAULT_QUEUE_SIZE));
    // One writer's worth of free buffers, for the next large upload.
    this.#partBuffers = new PartBufferPool(this.partSize, this.queueSize + 2);
    const maxSockets = options.maxSockets ?? DEFAULT_MAX_SOCKETS;
    this.#client = new S3Client({
      region: options.region,
      ...(options.endpoint === null ? {} : { endpoint: options.endpoint }),
      forcePathStyle: options.forcePathStyle,
      ...(options.accessKeyId !== null && options.secretAccessKey !== null
        ? { credentials: { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey } }
        : {}),
      // The SDK's defaults send a streamed body as aws-chunked with a checksum trailer, which
      // RGW (411) and others refuse or store corrupted; checksums only where S3 requires them.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: options.maxAttempts ?? 3,
      // An options object: the SDK builds its NodeHttpHandler from it.
      requestHandler: {
        connectionTimeout: 5_000,
        // From sending the request to the response headers, an 8 MiB part included.
        requestTimeout: 120_000,
        throwOnRequestTimeout: true,
        // A socket silent this long is dead (also while a GetObject body is being read).
        socketTimeout: 60_000,
        httpAgent: new http.Agent({ keepAlive: true, maxSockets }),
        httpsAgent: new https.Agent({ keepAlive: true, maxSockets }),
      },
    });
    if (endpointUsesTls(options.endpoint)) signPayloadsByTls(this.#client);
    if (options.onRequest) countRequests(this.#client, options.onRequest);
  }

  #objectKey(key: unknown, operation: string): string {
    assertValidKey(key, operation);
    return this.keyPrefix + key;
  }

  openWriter(key: string, options: OpenWriterOptions): ObjectWriter {
    const objectKey = this.#objectKey(key, 'openWriter');
    const partSize = choosePartSize(this.partSize, options.expectedSize);
    return new S3ObjectWriter({
      context: { client: this.#client, bucket: this.bucket },
      key,
      objectKey,
      contentType: options.contentType,
      partSize,
      queueSize: this.queueSize,
      partBuffers: this.#partBuffers,
      ...(options.expectedSize !== undefined && options.expectedSize <= partSize ? { firstPartBytes: options.expectedSize } : {}),
    });
  }

  async read(key: string, options?: ReadOptions): Promise<Readable> {
    const objectKey = this.#objectKey(key, 'read');
    const ranged = options?.start !== undefined || options?.end !== undefined;
    const { start, end } = checkRange(options, key);
    try {
      const output = await this.#client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: objectKey, ...(ranged ? { Range: `bytes=${start}-${end ?? ''}` } : {}) }),
      );
      if (!(output.Body instanceof Readable)) throw new Error('GetObject returned no Node stream');
      return output.Body;
    } catch (error) {
      if (isNotFound(error) && (error as SdkErrorShape).name !== 'NoSuchBucket') {
        throw new StorageError(`No object under ${key}`, { code: 'not-found', operation: 'read', key, cause: error });
      }
      if (httpStatusOf(error) === 416) {
        throw new StorageError(`Range ${start}-${end ?? ''} is outside the object`, { code: 'invalid-range', operation: 'read', key, cause: error });
      }
      throw wrap(error, 'read', key);
    }
  }

  /** Null for a missing object. A missing bucket also reads as null: HEAD answers carry no error code. */
  async stat(key: string): Promise<ObjectInfo | null> {
    const objectKey = this.#objectKey(key, 'stat');
    try {
      const head = await this.#client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: objectKey }));
      return { size: head.ContentLength ?? 0, etag: head.ETag || null, lastModified: head.LastModified ?? null };
    } catch (error) {
      if (isNotFound(error) && (error as SdkErrorShape).name !== 'NoSuchBucket') return null;
      throw wrap(error, 'stat', key);
    }
  }

  async remove(key: string): Promise<void> {
    const objectKey = this.#objectKey(key, 'remove');
    try {
      await this.#client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: objectKey }));
    } catch (error) {
      if (isNotFound(error) && (error as SdkErrorShape).name !== 'NoSuchBucket') return;
      throw wrap(error, 'remove', key);
    }
  }

  /** Multipart uploads under the key prefix initiated before `olderThan` (all pages). */
  async checkAccess(): Promise<void> {
    const timeout = AbortSignal.timeout(CHECK_TIMEOUT_MS);
    try {
      await this.#client.send(
        new ListMultipartUploadsCommand({ Bucket: this.bucket, MaxUploads: 1, ...(this.keyPrefix === '' ? {} : { Prefix: this.keyPrefix }) }),
        { abortSignal: timeout },
      );
    } catch (error) {
      if (timeout.aborted) {
        throw new StorageError(`S3 check failed: no answer within ${CHECK_TIMEOUT_MS / 1000} s`, { code: 'unavailable', operation: 'check', cause: error });
      }
      throw wrap(error, 'check', null);
    }
  }

  async listStaleUploads(olderThan: Date): Promise<StaleUpload[]> {
    const stale: StaleUpload[] = [];
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    try {
      for (;;) {
        const page = await this.#client.send(
          new ListMultipartUploadsCommand({
            Bucket: this.bucket,
            ...(this.keyPrefix ? { Prefix: this.keyPrefix } : {}),
            ...(keyMarker === undefined ? {} : { KeyMarker: keyMarker }),
            ...(uploadIdMarker === undefined ? {} : { UploadIdMarker: uploadIdMarker }),
          }),
        );
        for (const upload of page.Uploads ?? []) {
          if (!upload.Key?.startsWith(this.keyPrefix) || !upload.UploadId) continue;
          const key = upload.Key.slice(this.keyPrefix.length);
          if (!isValidKey(key)) continue; // not one of ours
          // Without an Initiated date an upload cannot be told apart from a fresh one; list it anyway
          // so it is not left forever.
          if (upload.Initiated && upload.Initiated.getTime() >= olderThan.getTime()) continue;
          stale.push({ key, uploadId: upload.UploadId, startedAt: upload.Initiated ?? null });
        }
        if (!page.IsTruncated) break;
        if (page.NextKeyMarker === keyMarker && page.NextUploadIdMarker === uploadIdMarker) break; // no progress
        keyMarker = page.NextKeyMarker;
        uploadIdMarker = page.NextUploadIdMarker;
      }
    } catch (error) {
      throw wrap(error, 'listStaleUploads', null);
    }
    return stale;
  }

  async abortStaleUpload(upload: { key: string; uploadId: string }): Promise<void> {
    const objectKey = this.#objectKey(upload.key, 'abortStaleUpload');
    try {
      await abortMultipartUpload(this.#client, this.bucket, objectKey, upload.uploadId);
    } catch (error) {
      throw wrap(error, 'abortStaleUpload', upload.key);
    }
  }

  async abortUploadsOf(key: string): Promise<number> {
    const objectKey = this.#objectKey(key, 'abortUploadsOf');
    let aborted = 0;
    try {
      // Keys are unique per upload, so one page (up to 1000 uploads) of this exact key holds them all.
      const page = await this.#client.send(new ListMultipartUploadsCommand({ Bucket: this.bucket, Prefix: objectKey }));
      for (const upload of page.Uploads ?? []) {
        if (upload.Key !== objectKey || !upload.UploadId) continue;
        await abortMultipartUpload(this.#client, this.bucket, objectKey, upload.UploadId);
        aborted++;
      }
    } catch (error) {
      throw wrap(error, 'abortUploadsOf', key);
    }
    return aborted;
  }

  /** Resumable (tus) uploads on the same bucket, prefix and client. */
  resumable(): S3ResumableStore {
    return new S3ResumableStore({ client: this.#client, bucket: this.bucket, keyPrefix: this.keyPrefix, partSize: this.partSize, wrap, isNotFound });
  }

  async close(): Promise<void> {
    this.#client.destroy();
  }
}
