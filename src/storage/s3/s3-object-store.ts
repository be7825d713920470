// The `s3` driver: any S3-compatible endpoint (AWS S3, Ceph RGW, ...), through @aws-sdk/client-s3
// and @aws-sdk/lib-storage.
//
// Writing: a writer whose object is announced to fit one part (`expectedSize`, a screenshot's
// Content-Length) keeps the caller's chunks and sends them in one PutObject at finish(); the
// stream below cost a 2 MiB upload 1-3 ms more of CPU (its reads concatenating,
// lib-storage's gathering copy, the garbage of both: docs/performance.md). Any other writer, and one
// whose body outgrows a part after all, feeds a PassThrough that lib-storage's `Upload` reads: up
// to one part's worth of bytes becomes a single PutObject, anything larger a multipart upload with
// `queueSize` parts in flight at once.
//
// Memory per writer, worst case ≈ (queueSize + 2) × partSize + 2 × highWaterMark:
// every part in flight holds its buffer (queueSize), one more part is being gathered, and
// lib-storage briefly holds one more while it concatenates the gathered chunks into a part (the
// leftover after a cut also keeps the previous part's buffer alive until the next cut); the
// PassThrough holds up to highWaterMark on each of its two sides before write() returns false.
// With the defaults (5 MiB parts, queueSize 1, 1 MiB highWaterMark) that is about 17 MiB for a
// large upload; a 2 MB screenshot of declared size holds its chunks, and while its PutObject is
// sent one concatenated copy of them. Dead part buffers are external memory that V8 frees only
// at its next full GC (up to ~64 MiB later),
// so RSS rises by more than the live bytes: a 250 MB upload from a loopback client raised RSS by
// 33-36 MB with these defaults, 59-68 MB with 5 MiB x 2 and 67-98 MB with 8 MiB x 2 (RGW on the
// same machine; the 64 MB budget is in docs/performance.md). Against that local RGW 1, 2 and 4
// parts in flight moved bytes at the same speed; a distant S3 with a long round trip per part
// wants more (S3_PARTS_IN_FLIGHT), at one part of memory each.
//
// Part size: 5 MiB by default (S3's minimum); grown, in whole MiB, for an `expectedSize` that
// would need more than 9,000 parts, so the upload stays below S3's 10,000-part limit with
// headroom if the body turns out somewhat larger than announced (a 250 MB video takes 48 parts).
//
// Clean-up: every request of a writer goes through a per-writer wrapper of the client that adds
// the writer's abort signal, remembers the UploadId and whether the object may already exist, and
// knows which requests are still in flight. abort() and failures cancel the part uploads in
// flight, let a CreateMultipartUpload/Complete in flight finish (so its outcome is known), abort
// the multipart upload themselves, delete an object a PutObject/Complete may have written, and
// then list the key's multipart uploads until none is left, retrying for a few seconds.
// Why not rely on lib-storage: `upload.abort()` only rejects done(); its AbortMultipartUpload is
// sent once every part uploader has stopped, which (measured on RGW) never happens while the body
// stream stays open, and its outcome is reported to no one.
import { EventEmitter } from 'node:events';
import http from 'node:http';
import https from 'node:https';
import { PassThrough, Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import type { HeadObjectCommandOutput, PutObjectCommandOutput } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { StorageError, assertValidKey, checkRange, isValidKey } from '../object-store.ts';
import type {
  ObjectInfo,
  ObjectStore,
  ObjectWriter,
  OpenWriterOptions,
  ReadOptions,
  StaleUpload,
  StorageErrorCode,
} from '../object-store.ts';
import { StreamObjectWriter, type ChunkSink } from '../stream-object-writer.ts';
import { S3ResumableStore } from './s3-resumable-store.ts';

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
  /** Bytes queued in a writer's PassThrough before write() returns false (default 1 MiB). */
  highWaterMark?: number;
  /** Connections kept per endpoint (default 64); requests beyond wait for a free socket. */
  maxSockets?: number;
  /** Attempts per request, including the first (default 3). */
  maxAttempts?: number;
}

const MiB = 1024 * 1024;
export const MIN_PART_SIZE = 5 * MiB;
export const DEFAULT_PART_SIZE = 5 * MiB;
const MAX_PART_SIZE = 5 * 1024 * MiB;
/** S3 allows 10,000 parts; aim for 9,000 so a body larger than announced still fits. */
const TARGET_MAX_PARTS = 9_000;
export const DEFAULT_QUEUE_SIZE = 1;
const DEFAULT_HIGH_WATER_MARK = MiB;
const DEFAULT_MAX_SOCKETS = 64;
/** checkAccess() gives up after this (the client's own timeouts are sized for 8 MiB parts). */
const CHECK_TIMEOUT_MS = 10_000;
/** How long abort() keeps checking that the key's multipart uploads are really gone. */
const SWEEP_DEADLINE_MS = 5_000;
const NETWORK_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

export function choosePartSize(minimum: number, expectedSize?: number): number {
  let size = Math.max(MIN_PART_SIZE, minimum);
  if (expectedSize !== undefined && Number.isFinite(expectedSize) && expectedSize > 0) {
    const needed = Math.ceil(expectedSize / TARGET_MAX_PARTS);
    if (needed > size) size = Math.ceil(needed / MiB) * MiB;
  }
  return Math.min(size, MAX_PART_SIZE);
}

interface SdkErrorShape {
  name?: string;
  code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
}

function httpStatusOf(error: unknown): number | undefined {
  return (error as SdkErrorShape | null)?.$metadata?.httpStatusCode;
}

/** Errors raised before a request left this machine: it cannot have changed anything. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * The request certainly changed nothing: the server refused it (4xx) or it never reached the
 * server. Anything else (5xx, reset, timeout, cancelled) leaves its outcome unknown.
 */
function changedNothing(error: unknown): boolean {
  const status = httpStatusOf(error);
  if (status !== undefined) return status >= 400 && status < 500;
  const code = (error as SdkErrorShape | null)?.code;
  return code !== undefined && NOT_SENT_CODES.has(code);
}

export function isNotFound(error: unknown): boolean {
  const name = (error as SdkErrorShape | null)?.name;
  return httpStatusOf(error) === 404 || name === 'NotFound' || name === 'NoSuchKey' || name === 'NoSuchUpload';
}

function codeFor(error: unknown): StorageErrorCode {
  const status = httpStatusOf(error);
  if (status !== undefined) return status >= 500 || status === 429 ? 'unavailable' : 'failed';
  const { name, code } = (error as SdkErrorShape | null) ?? {};
  if (name === 'TimeoutError' || (code !== undefined && NETWORK_ERROR_CODES.has(code))) return 'unavailable';
  return 'failed';
}

export function wrap(error: unknown, operation: string, key: string | null): StorageError {
  if (error instanceof StorageError) return error;
  const { name, message } = (error as SdkErrorShape | null) ?? {};
  const status = httpStatusOf(error);
  const detail = [name, status === undefined ? undefined : `HTTP ${status}`, message].filter(Boolean).join(', ');
  return new StorageError(`S3 ${operation}${key === null ? '' : ` of ${key}`} failed${detail ? `: ${detail}` : ''}`, {
    code: codeFor(error),
    operation,
    key,
    cause: error,
  });
}

function commandName(command: unknown): string {
  return (command as { constructor?: { name?: string } } | null)?.constructor?.name ?? '';
}

const UNCANCELLED_COMMANDS = new Set(['CreateMultipartUploadCommand', 'CompleteMultipartUploadCommand', 'AbortMultipartUploadCommand']);

type Send = (command: unknown, options?: { abortSignal?: AbortSignal }) => Promise<unknown>;

interface StoreContext {
  client: S3Client;
  bucket: string;
}

/**
 * The sink of a writer whose object should fit one part: it keeps the chunks (the caller's, which
 * stay unchanged once written) for one PutObject, and never asks to wait, as it holds at most a
 * part. Past `limit` bytes it calls `overflow` once, writes what it kept into the stream that
 * returns, and from then on forwards every chunk and that stream's 'drain'.
 */
class SinglePartSink extends EventEmitter implements ChunkSink {
  readonly #limit: number;
  readonly #overflow: () => PassThrough;
  #chunks: Buffer[] = [];
  #bytes = 0;
  #stream: PassThrough | null = null;

  constructor(limit: number, overflow: () => PassThrough) {
    super();
    this.#limit = limit;
    this.#overflow = overflow;
  }

  write(chunk: Buffer): boolean {
    if (this.#stream) return this.#stream.write(chunk);
    this.#chunks.push(chunk);
    this.#bytes += chunk.length;
    if (this.#bytes <= this.#limit) return true;
    const stream = this.#overflow();
    this.#stream = stream;
    stream.on('drain', () => this.emit('drain'));
    let ready = true;
    for (const kept of this.#chunks) ready = stream.write(kept);
    this.#chunks = [];
    return ready;
  }

  /** The whole body for one PutObject, or null once it went to the stream. */
  takeBody(): Buffer | null {
    if (this.#stream) return null;
    const body = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks, this.#bytes);
    this.#chunks = [];
    return body;
  }

  drop(): void {
    this.#chunks = [];
  }
}

interface WriterOptions {
  context: StoreContext;
  key: string;
  objectKey: string;
  contentType: string;
  partSize: number;
  queueSize: number;
  highWaterMark: number;
  /** Keep the body for one PutObject while it fits a part (its announced size does). */
  singlePart: boolean;
}

class S3ObjectWriter extends StreamObjectWriter {
  readonly #context: StoreContext;
  readonly #options: WriterOptions;
  /** The S3 object key (with the store's prefix); `key` is the key as the caller knows it. */
  readonly #objectKey: string;
  readonly #singlePart: SinglePartSink | null;
  /** lib-storage's side: started at once, or when a single-part body outgrows its part. */
  #stream: { body: PassThrough; done: Promise<{ ETag?: string }> } | null = null;
  readonly #controller = new AbortController();
  readonly #inFlight = new Set<Promise<void>>();
  #uploadId: string | null = null;
  /** A CreateMultipartUpload got no definite answer (network error, cancelled): one may exist. */
  #createUncertain = false;
  /** A PutObject or CompleteMultipartUpload was sent: the object may exist. */
  #objectMayExist = false;

  constructor(options: WriterOptions) {
    // The sink is made before `this` exists; its overflow runs only on a later write().
    let writer: S3ObjectWriter | null = null;
    const singlePart = options.singlePart ? new SinglePartSink(options.partSize, () => writer!.#startStream().body) : null;
    const stream = singlePart ? null : new PassThrough({ highWaterMark: options.highWaterMark });
    super(options.key, singlePart ?? stream!);
    writer = this;
    this.#context = options.context;
    this.#options = options;
    this.#objectKey = options.objectKey;
    this.#singlePart = singlePart;
    if (stream) this.#startStream(stream);
  }

  /** Hands the body stream to lib-storage's Upload, which starts reading it at once. */
  #startStream(body = new PassThrough({ highWaterMark: this.#options.highWaterMark })): { body: PassThrough; done: Promise<{ ETag?: string }> } {
    const { context, partSize, queueSize, contentType } = this.#options;
    // lib-storage only calls `client.send` and reads `client.config`; this view of the shared
    // client routes its requests through #send, per writer, without touching the shared client.
    const client = Object.create(context.client) as S3Client;
    (client as unknown as { send: Send }).send = (command) => this.#send(command);
    const upload = new Upload({
      client,
      params: { Bucket: context.bucket, Key: this.#objectKey, Body: body, ContentType: contentType },
      partSize,
      queueSize,
      leavePartsOnError: false,
      abortController: this.#controller,
    });
    // Settles when the body ends (finish) or on abort/failure.
    const done = upload.done();
    done.catch((error: unknown) => {
      if (this.state === 'open') this.fail(error, 'write');
    });
    this.#stream = { body, done };
    return this.#stream;
  }

  protected override wrapError(error: unknown, operation: string): StorageError {
    return wrap(error, operation, this.key);
  }

  /** Every request of this writer: lib-storage's, and our own HeadObject. */
  #send<T>(command: unknown): Promise<T> {
    const name = commandName(command);
    // Requests carrying a body (UploadPart, PutObject) and our HeadObject are cancelled by an
    // abort. The small ones that create or end a multipart upload are let through, so that the
    // clean-up knows their outcome (the UploadId; whether the object exists) instead of guessing,
    // and lib-storage's own AbortMultipartUpload must not be cancelled by the abort it follows.
    const cancellable = !UNCANCELLED_COMMANDS.has(name);
    // Once stopped, nothing new starts (a CreateMultipartUpload sent now would outlive the clean-up).
    if (this.#controller.signal.aborted && name !== 'AbortMultipartUploadCommand') {
      return Promise.reject(Object.assign(new Error('The writer was stopped'), { name: 'AbortError' }));
    }
    const createsObject = name === 'PutObjectCommand' || name === 'CompleteMultipartUploadCommand';
    if (createsObject) this.#objectMayExist = true;
    const request = (this.#context.client.send as Send).call(
      this.#context.client,
      command,
      cancellable ? { abortSignal: this.#controller.signal } : undefined,
    ) as Promise<T>;
    const tracked = request.then(
      (output) => {
        if (name === 'CreateMultipartUploadCommand') this.#uploadId = (output as { UploadId?: string }).UploadId ?? null;
      },
      (error: unknown) => {
        if (name === 'CreateMultipartUploadCommand' && !changedNothing(error)) this.#createUncertain = true;
        // A refused PutObject/Complete wrote nothing (only one of them is ever sent per writer).
        if (createsObject && changedNothing(error)) this.#objectMayExist = false;
        // The SDK has already retried; report the failure now instead of when lib-storage gives up.
        if (name !== 'AbortMultipartUploadCommand' && this.state === 'open' && !this.#controller.signal.aborted) this.fail(error, 'write');
      },
    );
    this.#inFlight.add(tracked);
    void tracked.then(() => this.#inFlight.delete(tracked));
    return request;
  }

  protected override async complete(): Promise<{ size: number; etag: string | null }> {
    const body = this.#singlePart?.takeBody() ?? null;
    if (body !== null) {
      const { bucket } = this.#context;
      const output = await this.#send<PutObjectCommandOutput>(
        new PutObjectCommand({ Bucket: bucket, Key: this.#objectKey, Body: body, ContentLength: body.length, ContentType: this.#options.contentType }),
      );
      this.throwIfAborted();
      return { size: this.bytesWritten, etag: output.ETag || null };
    }
    const stream = this.#stream!;
    stream.body.end();
    const output = await stream.done;
    this.throwIfAborted();
    let etag = output.ETag || null;
    if (etag === null) {
      // RGW answers CompleteMultipartUpload without an ETag; HeadObject has it.
      const head = await this.#send<HeadObjectCommandOutput>(new HeadObjectCommand({ Bucket: this.#context.bucket, Key: this.#objectKey }));
      if (head.ContentLength !== undefined && head.ContentLength !== this.bytesWritten) {
        throw new Error(`wrote ${this.bytesWritten} bytes but the object holds ${head.ContentLength}`);
      }
      etag = head.ETag || null;
    }
    return { size: this.bytesWritten, etag };
  }

  protected override stop(): void {
    // What upload.abort() does; also cancels our requests in flight and the parts in flight, so
    // lib-storage stops.
    this.#controller.abort();
    this.#singlePart?.drop();
    this.#stream?.body.destroy();
  }

  protected override async cleanUp(): Promise<void> {
    // Requests in flight were cancelled; let them settle so none lands after the checks below.
    while (this.#inFlight.size > 0) await Promise.all(this.#inFlight);
    const { client, bucket } = this.#context;
    if (this.#uploadId !== null) await abortMultipartUpload(client, bucket, this.#objectKey, this.#uploadId);
    if (this.#objectMayExist) await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: this.#objectKey }));
    if (this.#uploadId !== null || this.#createUncertain) await this.#sweepKey();
  }

  /** Aborts whatever multipart upload is still listed for the key, until none is. */
  async #sweepKey(): Promise<void> {
    const { client, bucket } = this.#context;
    const deadline = Date.now() + SWEEP_DEADLINE_MS;
    for (let delay = 50; ; delay = Math.min(delay * 2, 1_000)) {
      const page = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: this.#objectKey }));
      const left = (page.Uploads ?? []).filter((upload) => upload.Key === this.#objectKey && upload.UploadId);
      if (left.length === 0) return;
      for (const upload of left) await abortMultipartUpload(client, bucket, this.#objectKey, upload.UploadId!);
      if (Date.now() + delay > deadline) {
        throw new StorageError(`Multipart uploads of ${this.key} are still listed after aborting them`, {
          code: 'unavailable',
          operation: 'abort',
          key: this.key,
        });
      }
      await sleep(delay);
    }
  }
}

/** AbortMultipartUpload; an upload that is already gone is fine. */
async function abortMultipartUpload(client: S3Client, bucket: string, objectKey: string, uploadId: string): Promise<void> {
  try {
    await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: objectKey, UploadId: uploadId }));
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
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

export class S3ObjectStore implements ObjectStore {
  readonly driver = 's3' as const;
  readonly bucket: string;
  readonly keyPrefix: string;
  readonly partSize: number;
  readonly queueSize: number;
  readonly #client: S3Client;
  readonly #highWaterMark: number;

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
    this.partSize = Math.max(MIN_PART_SIZE, options.partSize ?? DEFAULT_PART_SIZE);
    this.queueSize = Math.max(1, Math.floor(options.queueSize ?? DEFAULT_QUEUE_SIZE));
    this.#highWaterMark = options.highWaterMark ?? DEFAULT_HIGH_WATER_MARK;
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
      highWaterMark: this.#highWaterMark,
      singlePart: options.expectedSize !== undefined && options.expectedSize <= partSize,
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
