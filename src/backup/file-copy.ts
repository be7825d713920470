import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Transform, Writable, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { HASH_BLOCK_SIZE, combineBlockHashes, hashBlock, loadXxhash, type XxHashApi } from '../uploads/hashing/content-hash.ts';
import type { ObjectStore } from '../storage/object-store.ts';

/** A stored file as the rows name it: its key, and the size and content hash its row records. */
export interface StoredFile {
  key: string;
  size: number;
  /** The row's content hash (content-hash.ts); null for rows that never recorded one. */
  hash: string | null;
}

/** The content hash (content-hash.ts: xxh64 of 1 MiB blocks) and size of the bytes that pass through. */
class HashingPassThrough extends Transform {
  private readonly api: XxHashApi;
  private readonly block = Buffer.allocUnsafe(HASH_BLOCK_SIZE);
  private filled = 0;
  private readonly blockHashes: bigint[] = [];
  size = 0;

  constructor(api: XxHashApi) {
    super();
    this.api = api;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null, data?: Buffer) => void): void {
    this.size += chunk.length;
    for (let offset = 0; offset < chunk.length;) {
      const taken = chunk.copy(this.block, this.filled, offset, offset + HASH_BLOCK_SIZE - this.filled);
      this.filled += taken;
      offset += taken;
      if (this.filled === HASH_BLOCK_SIZE) {
        this.blockHashes.push(hashBlock(this.api, this.block));
        this.filled = 0;
      }
    }
    done(null, chunk);
  }

  digest(): string {
    if (this.filled > 0) this.blockHashes.push(hashBlock(this.api, this.block.subarray(0, this.filled)));
    this.filled = 0;
    return combineBlockHashes(this.api, this.blockHashes);
  }
}

export class FileMismatchError extends Error {
  override name = 'FileMismatchError';
}

/** Pipes `source` into `sink` through a hasher and checks the bytes against the row's size and hash. */
async function copyChecked(file: StoredFile, source: Readable | NodeJS.ReadableStream, sink: Writable): Promise<void> {
  const hasher = new HashingPassThrough(await loadXxhash());
  await pipeline(source as Readable, hasher, sink);
  const hash = hasher.digest();
  if (hasher.size !== file.size || (file.hash !== null && hash !== file.hash)) {
    throw new FileMismatchError(
      `${file.key}: ${hasher.size} bytes with hash ${hash}, but its row records ${file.size} bytes${file.hash ? ` with hash ${file.hash}` : ''}`,
    );
  }
}

/** Where a backup keeps the object `key` below its directory. */
export function backupFilePath(directory: string, key: string): string {
  return path.join(directory, 'files', ...key.split('/'));
}

/** Copies the object of `file` from `store` into the backup directory, checked against its row. */
export async function copyToBackup(store: ObjectStore, file: StoredFile, directory: string): Promise<void> {
  const target = backupFilePath(directory, file.key);
  await mkdir(path.dirname(target), { recursive: true });
  const partial = `${target}.partial`;
  try {
    await copyChecked(file, await store.read(file.key), createWriteStream(partial));
    await rename(partial, target);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
}

/** Writes the backed-up copy of `file` into `store` under its key, checked against its row on the way. */
export async function copyFromBackup(store: ObjectStore, file: StoredFile, directory: string): Promise<void> {
  const writer = store.openWriter(file.key, { contentType: 'application/octet-stream', expectedSize: file.size });
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      if (writer.write(chunk)) done();
      else writer.onDrain(() => done());
    },
  });
  let failure: Error | null = null;
  writer.onError((error) => {
    failure = error;
    sink.destroy(error);
  });
  try {
    await copyChecked(file, createReadStream(backupFilePath(directory, file.key)), sink);
    if (failure) throw failure;
    await writer.finish();
  } catch (error) {
    await writer.abort();
    throw error;
  }
}

/** Runs `work` for every item, `concurrency` at a time; the first failure stops new work and is thrown once the running ones settle. */
export async function forEachLimited<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: unknown = null;
  const worker = async () => {
    while (failure === null && next < items.length) {
      const item = items[next++]!;
      try {
        await work(item);
      } catch (error) {
        failure ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  if (failure !== null) throw failure;
}
