// The `fs` driver: objects are files under a root directory (the service passes `<DATA_DIR>/files`).
//
// Writing: bytes go to a temp file `<root>/.uploads/<name>.part` (TempFileSink), then the
// finished file is renamed into place, so a reader sees the whole object or nothing.
//
// Memory per writer is bounded by the sink's highWaterMark (1 MiB by default): write() returns
// false once that much is queued and the caller waits for 'drain'. Chunks handed to write() are
// kept by reference until written (no copy).
//
// Durability (`durable`, default true): once its last bytes are written, the temp file is renamed
// into place, and then the file and the target directory (plus any directory the rename needed
// to create) are fsynced together, so that a committed media row never points at a file a power
// cut took away (concurrent renames into one directory share its fsyncs: DirectorySyncer).
// Renamed first, both fsyncs wait for the same journal commit instead of one each in turn; a
// power cut before they end may leave a short file under the key, but no row points at it, since
// the upload commits only after finish(). The cost is one fsync of the file's data at finish plus
// one small directory fsync: measured on the dev VM's virtio disk, finish() of a 64 MiB file takes 27-32 ms
// with them and 1-2 ms without (64 MiB end to end: ~1,000-1,300 MiB/s instead of ~2,100-2,900),
// i.e. a fraction of the time the bytes took to arrive over any network. Tests may turn it off.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import type { Stats } from 'node:fs';
import { access, mkdir, open, readdir, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { StorageError, assertValidKey, checkRange } from '../object-store.ts';
import type { ObjectInfo, ObjectStore, ObjectWriter, OpenWriterOptions, ReadOptions, StaleUpload } from '../object-store.ts';
import { StreamObjectWriter } from '../stream-object-writer.ts';
import { DirectorySyncer } from './directory-syncer.ts';
import { TempFileSink } from './temp-file-sink.ts';
import { fsLocation } from '../storage-location.ts';

export interface FsObjectStoreOptions {
  /** Directory holding the objects; created on demand. */
  root: string;
  /** Bytes a writer queues before write() returns false, and the read chunk size. Default 1 MiB. */
  highWaterMark?: number;
  /** fsync file and directory at finish (default true). */
  durable?: boolean;
}

const DEFAULT_HIGH_WATER_MARK = 1024 * 1024;
/** Temp files live here, below the root, so that rename() stays on one file system. */
const UPLOADS_DIR = '.uploads';
/** `<start time base36>-<random hex>[~<key base64url>].part` */
const TEMP_NAME_PATTERN = /^([0-9a-z]{1,12})-([0-9a-f]{12})(?:~([A-Za-z0-9_-]{1,222}))?\.part$/;
const MAX_FILE_NAME = 255;

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}

function wrap(error: unknown, operation: string, key: string | null, message = `Storage ${operation} failed`): StorageError {
  if (error instanceof StorageError) return error;
  const detail = error instanceof Error ? `: ${error.message}` : '';
  return new StorageError(`${message}${detail}`, { code: 'failed', operation, key, cause: error });
}

async function unlinkIfPresent(file: string): Promise<void> {
  try {
    await unlink(file);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT' && errorCode(error) !== 'ENOTDIR') throw error;
  }
}

function etagOf(info: Stats): string {
  // Objects are never rewritten in place (keys are immutable), so size and mtime identify a version.
  return `"${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}"`;
}

function tempName(key: string): string {
  // randomUUID draws from a batch of random bytes; randomBytes(6) would call into OpenSSL on every upload.
  const base = `${Date.now().toString(36)}-${randomUUID().replace('-', '').slice(0, 12)}`;
  const withKey = `${base}~${Buffer.from(key).toString('base64url')}.part`;
  return withKey.length <= MAX_FILE_NAME ? withKey : `${base}.part`;
}

class FsObjectWriter extends StreamObjectWriter {
  takesWhileBehind(): boolean {
    return true;
  }
  readonly #finalPath: string;
  readonly #root: string;
  readonly #durable: boolean;
  readonly #file: TempFileSink;
  readonly #directories: DirectorySyncer;
  #renamed = false;

  constructor(options: {
    key: string; root: string; tempPath: string; finalPath: string; highWaterMark: number; durable: boolean; directories: DirectorySyncer;
  }) {
    const file = new TempFileSink(options.tempPath, options.highWaterMark);
    super(options.key, file);
    this.#root = options.root;
    this.#finalPath = options.finalPath;
    this.#durable = options.durable;
    this.#directories = options.directories;
    this.#file = file;
    file.onError((error) => {
      if (this.state === 'open') this.fail(error, 'write'); // finish() sees the error itself
    });
  }

  protected override wrapError(error: unknown, operation: string): StorageError {
    return wrap(error, operation, this.key);
  }

  protected override async complete(): Promise<{ size: number; etag: string | null }> {
    await this.#file.flushed();
    this.throwIfAborted();
    const dir = path.dirname(this.#finalPath);
    // The target directory usually exists already: create it only when the rename says it does not.
    let created: string | undefined;
    try {
      await rename(this.#file.path, this.#finalPath);
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') throw error;
      created = await mkdir(dir, { recursive: true });
      this.throwIfAborted();
      await rename(this.#file.path, this.#finalPath);
    }
    this.#renamed = true;
    // Both fsyncs after the rename, at once: one journal commit (see "Durability" above).
    await Promise.all([this.#file.end(this.#durable), this.#durable && this.#syncDirectories(dir, created)]);
    this.throwIfAborted();
    // Every byte went through writeAll(), which fails rather than write less: the size is known.
    return { size: this.bytesWritten, etag: null };
  }

  /** fsyncs the target directory and, when mkdir made new directories, their parents too. */
  async #syncDirectories(dir: string, firstCreated: string | undefined): Promise<void> {
    const dirs = [dir];
    if (firstCreated !== undefined) {
      for (let current = dir; current !== path.dirname(firstCreated) && current.startsWith(this.#root); ) {
        current = path.dirname(current);
        dirs.push(current);
      }
    }
    for (const each of dirs) await this.#directories.sync(each);
  }

  /** After a failure the file is closed; after finish() already: then a no-op. */
  protected override stop(): void {
    void this.#file.destroy().catch(() => undefined);
  }

  protected override async cleanUp(): Promise<void> {
    await this.#file.destroy().catch(() => undefined); // the file may only now have been created by a pending open
    await unlinkIfPresent(this.#file.path);
    if (this.#renamed) await unlinkIfPresent(this.#finalPath);
  }
}

export class FsObjectStore implements ObjectStore {
  readonly driver = 'fs' as const;
  readonly location = fsLocation();
  readonly root: string;
  readonly #uploadsDir: string;
  readonly #highWaterMark: number;
  readonly #durable: boolean;
  readonly #directories = new DirectorySyncer();

  constructor(options: FsObjectStoreOptions) {
    this.root = path.resolve(options.root);
    this.#uploadsDir = path.join(this.root, UPLOADS_DIR);
    this.#highWaterMark = options.highWaterMark ?? DEFAULT_HIGH_WATER_MARK;
    this.#durable = options.durable ?? true;
  }

  #pathOf(key: unknown, operation: string): string {
    assertValidKey(key, operation);
    if (key.split('/')[0] === UPLOADS_DIR) {
      throw new StorageError(`Invalid object key ${JSON.stringify(key)}: ${UPLOADS_DIR} is reserved`, { code: 'invalid-key', operation });
    }
    return path.join(this.root, ...key.split('/'));
  }

  openWriter(key: string, _options: OpenWriterOptions): ObjectWriter {
    const finalPath = this.#pathOf(key, 'openWriter');
    return new FsObjectWriter({
      key,
      root: this.root,
      tempPath: path.join(this.#uploadsDir, tempName(key)),
      finalPath,
      highWaterMark: this.#highWaterMark,
      durable: this.#durable,
      directories: this.#directories,
    });
  }

  localPath(key: string): string {
    return this.#pathOf(key, 'localPath');
  }

  async read(key: string, options?: ReadOptions): Promise<fs.ReadStream> {
    const file = this.#pathOf(key, 'read');
    const range = checkRange(options, key);
    let handle: fs.promises.FileHandle;
    try {
      handle = await open(file, 'r');
    } catch (error) {
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') {
        throw new StorageError(`No object under ${key}`, { code: 'not-found', operation: 'read', key, cause: error });
      }
      throw wrap(error, 'read', key);
    }
    try {
      const info = await handle.stat();
      if (!info.isFile()) throw new StorageError(`No object under ${key}`, { code: 'not-found', operation: 'read', key });
      const ranged = options?.start !== undefined || options?.end !== undefined;
      // Like S3 (416): a range must start inside the object.
      if (ranged && range.start >= info.size) {
        throw new StorageError(`Range ${range.start}- is outside the object (${info.size} bytes)`, { code: 'invalid-range', operation: 'read', key });
      }
      const end = range.end === undefined ? undefined : Math.min(range.end, info.size - 1);
      // The ReadStream owns the handle from here on and closes it when it ends or is destroyed.
      return handle.createReadStream({ start: range.start, end, highWaterMark: this.#highWaterMark });
    } catch (error) {
      await handle.close().catch(() => undefined);
      throw wrap(error, 'read', key);
    }
  }

  async stat(key: string): Promise<ObjectInfo | null> {
    const file = this.#pathOf(key, 'stat');
    try {
      const info = await stat(file);
      if (!info.isFile()) return null;
      return { size: info.size, etag: etagOf(info), lastModified: info.mtime };
    } catch (error) {
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return null;
      throw wrap(error, 'stat', key);
    }
  }

  async remove(key: string): Promise<void> {
    const file = this.#pathOf(key, 'remove');
    try {
      await unlinkIfPresent(file);
    } catch (error) {
      throw wrap(error, 'remove', key);
    }
  }

  /**
   * Temp files whose last write is older than `olderThan`: a writer still writing keeps its file
   * fresh, so only abandoned ones are listed. uploadId is the temp file's name.
   */
  async checkAccess(): Promise<void> {
    try {
      await mkdir(this.#uploadsDir, { recursive: true });
      await access(this.#uploadsDir, fs.constants.R_OK | fs.constants.W_OK);
    } catch (error) {
      throw new StorageError(`The storage directory ${this.root} is not usable: ${(error as Error).message}`, { code: 'failed', operation: 'check', cause: error });
    }
  }

  async listStaleUploads(olderThan: Date): Promise<StaleUpload[]> {
    let names: string[];
    try {
      names = await readdir(this.#uploadsDir);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return [];
      throw wrap(error, 'listStaleUploads', null);
    }
    const stale: StaleUpload[] = [];
    for (const name of names) {
      const match = TEMP_NAME_PATTERN.exec(name);
      if (!match) continue;
      let info: Stats;
      try {
        info = await stat(path.join(this.#uploadsDir, name));
      } catch (error) {
        if (errorCode(error) === 'ENOENT') continue; // finished or aborted meanwhile
        throw wrap(error, 'listStaleUploads', null);
      }
      if (!info.isFile() || info.mtimeMs >= olderThan.getTime()) continue;
      const started = Number.parseInt(match[1] ?? '', 36);
      stale.push({
        key: match[3] ? Buffer.from(match[3], 'base64url').toString() : '',
        uploadId: name,
        startedAt: Number.isFinite(started) ? new Date(started) : null,
      });
    }
    return stale;
  }

  async abortStaleUpload(upload: { key: string; uploadId: string }): Promise<void> {
    if (!TEMP_NAME_PATTERN.test(upload.uploadId)) {
      throw new StorageError(`Not an upload id of the fs store: ${JSON.stringify(upload.uploadId)}`, {
        code: 'invalid-key',
        operation: 'abortStaleUpload',
        key: upload.key,
      });
    }
    try {
      await unlinkIfPresent(path.join(this.#uploadsDir, upload.uploadId));
    } catch (error) {
      throw wrap(error, 'abortStaleUpload', upload.key);
    }
  }

  async abortUploadsOf(key: string): Promise<number> {
    assertValidKey(key, 'abortUploadsOf');
    let names: string[];
    try {
      names = await readdir(this.#uploadsDir);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return 0;
      throw wrap(error, 'abortUploadsOf', key);
    }
    const encoded = Buffer.from(key).toString('base64url');
    let aborted = 0;
    for (const name of names) {
      // A temp file named without its key (too long a key) cannot be attributed; the age-based sweep takes it.
      if (TEMP_NAME_PATTERN.exec(name)?.[3] !== encoded) continue;
      try {
        await unlinkIfPresent(path.join(this.#uploadsDir, name));
        aborted++;
      } catch (error) {
        throw wrap(error, 'abortUploadsOf', key);
      }
    }
    return aborted;
  }

  async close(): Promise<void> {
    // Nothing to release: every writer and read stream owns its own file handle.
  }
}
