// The fs driver's temp file as a write queue: chunks are queued by reference and written in
// order, all that queued up while the previous write ran in one writev(). It replaces an fs
// WriteStream: a small upload then costs one open, one writev, one fsync and one close on the
// thread pool, without the Writable state machine around every chunk (bench/profile.ts showed
// that machinery at ~50 µs of main-thread time per 256 KiB upload).
import fs from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { mkdir, open } from 'node:fs/promises';
import path from 'node:path';
import type { ChunkSink } from '../stream-object-writer.ts';

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}

/** Opens a new file (never an existing one), creating its directory only when it is missing. */
async function openNew(file: string): Promise<FileHandle> {
  const flags = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL;
  try {
    return await open(file, flags, 0o644);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
    await mkdir(path.dirname(file), { recursive: true });
    return await open(file, flags, 0o644);
  }
}

export class TempFileSink implements ChunkSink {
  readonly #file: string;
  readonly #highWaterMark: number;
  readonly #opened: Promise<FileHandle>;
  #queue: Buffer[] = [];
  #queuedBytes = 0;
  /** write() answered false: tell the drain listeners once the queue is below the mark again. */
  #behind = false;
  #pumping: Promise<void> | null = null;
  #error: Error | null = null;
  #closed: Promise<void> | null = null;
  readonly #drainListeners: (() => void)[] = [];
  readonly #errorListeners: ((error: Error) => void)[] = [];

  constructor(file: string, highWaterMark: number) {
    this.#file = file;
    this.#highWaterMark = highWaterMark;
    // Opened at once, so the file exists (and is cleaned up) even when no byte is ever written.
    this.#opened = openNew(file);
    this.#opened.catch((error: unknown) => this.#fail(error as Error));
  }

  get path(): string {
    return this.#file;
  }

  write(chunk: Buffer): boolean {
    if (this.#error || this.#closed) return true; // the writer has failed or stopped: bytes are dropped
    this.#queue.push(chunk);
    this.#queuedBytes += chunk.length;
    this.#pumping ??= this.#pump();
    if (this.#queuedBytes < this.#highWaterMark) return true;
    this.#behind = true;
    return false;
  }

  on(event: 'drain', listener: () => void): void {
    if (event === 'drain') this.#drainListeners.push(listener);
  }

  onError(listener: (error: Error) => void): void {
    this.#errorListeners.push(listener);
  }

  /** Resolves once every queued byte is written; rejects with the first error. */
  async flushed(): Promise<void> {
    await this.#opened;
    while (this.#pumping) await this.#pumping;
    if (this.#error) throw this.#error;
  }

  /** Writes what is queued, fsyncs when `durable`, and closes the file; rejects with the first error. */
  async end(durable: boolean): Promise<void> {
    await this.flushed();
    const handle = await this.#opened;
    try {
      if (durable) await handle.sync();
    } finally {
      await this.#close();
    }
    if (this.#error) throw this.#error;
  }

  /** Stops writing: what is queued is dropped and the file is closed (not removed). */
  destroy(): Promise<void> {
    this.#queue = [];
    this.#queuedBytes = 0;
    return this.#close();
  }

  #close(): Promise<void> {
    this.#closed ??= (async () => {
      const handle = await this.#opened.catch(() => null);
      while (this.#pumping) await this.#pumping;
      await handle?.close();
    })();
    return this.#closed;
  }

  async #pump(): Promise<void> {
    try {
      const handle = await this.#opened;
      while (this.#queue.length > 0 && !this.#error) {
        const batch = this.#queue;
        this.#queue = [];
        const bytes = batch.reduce((sum, chunk) => sum + chunk.length, 0);
        await writeAll(handle, batch, bytes);
        this.#queuedBytes -= bytes;
        if (this.#behind && this.#queuedBytes < this.#highWaterMark) {
          this.#behind = false;
          for (const listener of this.#drainListeners) listener();
        }
      }
    } catch (error) {
      this.#fail(error as Error);
    } finally {
      this.#pumping = null;
    }
  }

  #fail(error: Error): void {
    if (this.#error) return;
    this.#error = error;
    this.#queue = [];
    for (const listener of this.#errorListeners) listener(error);
  }
}

/** writev() until every byte is in: a regular file may take less than asked (a full disk answers an error next). */
async function writeAll(handle: FileHandle, chunks: Buffer[], total: number): Promise<void> {
  let pending = chunks;
  let left = total;
  while (left > 0) {
    const { bytesWritten } = pending.length === 1 ? await handle.write(pending[0]!) : await handle.writev(pending);
    left -= bytesWritten;
    if (left > 0) pending = rest(pending, bytesWritten);
  }
}

function rest(chunks: Buffer[], skip: number): Buffer[] {
  const remaining: Buffer[] = [];
  let skipped = skip;
  for (const chunk of chunks) {
    if (skipped >= chunk.length) {
      skipped -= chunk.length;
      continue;
    }
    remaining.push(skipped > 0 ? chunk.subarray(skipped) : chunk);
    skipped = 0;
  }
  return remaining;
}
