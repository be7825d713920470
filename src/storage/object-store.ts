// The storage seam: one short interface, two drivers (`fs/`, `s3/`), one conformance suite
// (test/storage/object-store-conformance.ts). Nothing here knows about HTTP or uWS.

/**
 * Streams one object into storage. Created by `ObjectStore.openWriter`; owned by one upload.
 *
 * Life cycle: write* → finish() (object visible under its key) or abort() (nothing left).
 * A failure while writing is reported once through onError; finish() then rejects.
 * abort() after a successful finish() does nothing: the object then belongs to the caller,
 * who removes it with `ObjectStore.remove` if it must go.
 */
export interface ObjectWriter {
  /**
   * Queues a chunk (the writer may keep a reference until it is written). false = the writer is behind: wait for onDrain.
   * `transient`: the chunk's memory is reused once write() returns, so the writer must not keep it:
   * it writes it through at once or copies it.
   */
  write(chunk: Buffer, transient?: boolean): boolean;
  onDrain(listener: () => void): void;
  /**
   * Whether write() takes a transient chunk now, although it asked to wait, without holding more
   * than the writer allows itself (the fs driver writes it through to its file at once; the s3
   * driver has a spare part buffer), so a caller whose source cannot stop delivering at once may go
   * on writing instead of buffering. Absent: never.
   */
  takesWhileBehind?(): boolean;
  /**
   * True when write() copies every chunk (the s3 driver's part buffers), so that a caller holding
   * memory it will reuse passes it as transient rather than copying it first. Absent: false.
   */
  readonly copiesChunks?: boolean;
  /** Called once if the writer fails before finish/abort (e.g. storage unreachable), so the upload can stop early. */
  onError(listener: (error: Error) => void): void;
  /**
   * All bytes written and visible under the key. Rejects on failure (after cleaning up). `etag` is
   * null when the driver would need another call to learn it (fs); stat() then tells.
   */
  finish(): Promise<{ size: number; etag: string | null }>;
  /** Stops and removes everything: temp file / multipart upload. Safe to call at any time, also after an error, idempotent. */
  abort(): Promise<void>;
  readonly bytesWritten: number;
}

export interface ObjectInfo {
  size: number;
  etag: string | null;
  lastModified: Date | null;
}

export interface ReadOptions {
  start?: number;
  /** Inclusive. */
  end?: number;
}

export interface OpenWriterOptions {
  contentType: string;
  /** A hint (e.g. the request's Content-Length) used to choose the part size; not enforced. */
  expectedSize?: number;
}

/** An upload a crash (or a lost abort) left behind: a temp file (fs) or a multipart upload (s3). */
export interface StaleUpload {
  /** The object key the upload was for; '' when the driver cannot tell (an fs temp file named without its key). */
  key: string;
  uploadId: string;
  startedAt: Date | null;
}

export interface ObjectStore {
  readonly driver: 'fs' | 's3' | 'db';
  /** Where its objects live, as rows record it (storage-location.ts): `fs` or `s3:<bucket>/<key prefix>`. */
  readonly location: string;
  /** Throws StorageError('invalid-key') at once for a bad key; other failures surface through the writer. */
  openWriter(key: string, options: OpenWriterOptions): ObjectWriter;
  /** A Readable with backpressure. Rejects with StorageError('not-found') when there is no such object. */
  read(key: string, options?: ReadOptions): Promise<NodeJS.ReadableStream & AsyncIterable<Buffer>>;
  stat(key: string): Promise<ObjectInfo | null>;
  /**
   * The object's file on this machine, for drivers that keep objects as files (fs): a reader in
   * another process opens it there instead of having the bytes read and sent to it. Absent: the
   * driver has no such file. Not checked: the object may be gone by the time it is opened.
   */
  localPath?(key: string): string;
  /** Idempotent: removing a missing object succeeds. */
  remove(key: string): Promise<void>;
  /**
   * Whether the storage is usable with the configured settings (s3: the bucket answers a listing of
   * the service's multipart uploads; fs: the directory can be created and written). Resolves, or
   * rejects with StorageError: 'unavailable' when it was not reached or answered 5xx, 'failed' when
   * it refused (wrong bucket, credentials, region, directory permissions).
   */
  checkAccess(): Promise<void>;
  /** For the crash sweeper: in-progress uploads (temp files / multipart uploads) started before `olderThan`. */
  listStaleUploads(olderThan: Date): Promise<StaleUpload[]>;
  /** Idempotent: an upload that is already gone is fine. */
  abortStaleUpload(upload: { key: string; uploadId: string }): Promise<void>;
  /**
   * Aborts every in-progress upload (temp file / multipart upload) of `key`, however fresh, and
   * returns how many there were. For leftovers known to be dead (a previous incarnation of this
   * instance); never call it for a key a live writer may still use.
   */
  abortUploadsOf(key: string): Promise<number>;
  close(): Promise<void>;
}

/**
 * What went wrong, for callers that react differently:
 * - invalid-key / invalid-range: a programming error in the caller (bad key or range);
 * - not-found: read of a missing object;
 * - aborted: the writer was aborted (finish() after or during abort());
 * - unavailable: storage did not answer or answered 5xx / timed out (worth retrying later);
 * - failed: storage refused (4xx such as a wrong secret or a missing bucket) or anything else.
 */
export type StorageErrorCode = 'invalid-key' | 'invalid-range' | 'not-found' | 'aborted' | 'unavailable' | 'failed';

export interface StorageErrorOptions {
  code: StorageErrorCode;
  /** The store operation that failed, e.g. 'write', 'finish', 'read', 'stat'. */
  operation: string;
  key?: string | null;
  cause?: unknown;
}

/** Wraps every driver failure; the driver's own error is the `cause`. */
export class StorageError extends Error {
  override name = 'StorageError';
  readonly code: StorageErrorCode;
  readonly operation: string;
  readonly key: string | null;

  constructor(message: string, options: StorageErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
    this.operation = options.operation;
    this.key = options.key ?? null;
  }
}

export function isStorageError(error: unknown): error is StorageError {
  return error instanceof StorageError;
}

const KEY_PATTERN = /^[A-Za-z0-9/_.-]{1,512}$/;

/**
 * Keys come from the service (`media/<teamId>/<mediaId>`), never straight from a client, but are
 * checked anyway because the fs driver turns them into paths: only [A-Za-z0-9/_.-], 1-512 chars,
 * no leading or trailing slash, no empty, `.` or `..` segment.
 */
export function isValidKey(key: unknown): key is string {
  return (
    typeof key === 'string' &&
    KEY_PATTERN.test(key) &&
    key.split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..')
  );
}

/** Throws StorageError('invalid-key') unless `isValidKey(key)`. */
export function assertValidKey(key: unknown, operation = 'key'): asserts key is string {
  if (!isValidKey(key)) {
    const shown = typeof key === 'string' ? JSON.stringify(key.length > 80 ? `${key.slice(0, 80)}…` : key) : typeof key;
    throw new StorageError(`Invalid object key ${shown}`, { code: 'invalid-key', operation });
  }
}

/** Checks a ReadOptions range; returns it with integers, `end` possibly undefined (to the end of the object). */
export function checkRange(options: ReadOptions | undefined, key: string): { start: number; end: number | undefined } {
  const start = options?.start ?? 0;
  const end = options?.end;
  const isIndex = (value: number) => Number.isSafeInteger(value) && value >= 0;
  if (!isIndex(start) || (end !== undefined && (!isIndex(end) || end < start))) {
    throw new StorageError(`Invalid range ${start}-${end ?? ''}`, { code: 'invalid-range', operation: 'read', key });
  }
  return { start, end };
}
