// The fs driver's temp file as a write queue: chunks are queued by reference and written in
// order, all that queued up while the previous write ran in one writev(). It replaces an fs
// WriteStream: a small upload then costs one open, one writev and one fsync on the thread pool,
// without the Writable state machine around every chunk (bench/profile.ts showed that machinery
// at ~50 µs of main-thread time per 256 KiB upload). The file is a plain descriptor, closed on the
// main thread once nothing is in flight on it: closing a file whose bytes are written waits for no
// disk, while a hop to the thread pool and back costs two thread wake-ups.
//
// A chunk written while the queue is already full, or one the caller must get back at once
// (writeTransient: a view of uWS's receive buffer), is not queued: it is written through at once,
// synchronously (after what is queued, every write at its own offset). The caller was told to
// wait, so this only happens when its source cannot stop delivering, as uWS reading on after
// pause(); the bytes then go to the page cache once, straight from the socket's buffer, instead of
// being held in memory or spooled to another file and read back.
import fs from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { ChunkSink } from '../stream-object-writer.ts';
import { fsyncDescriptor, openDescriptor, writeAt } from './descriptor-ops.ts';

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}

/** Opens a new file (never an existing one), creating its directory only when it is missing. */
async function openNew(file: string): Promise<number> {
  const flags = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL;
  try {
    return await openDescriptor(file, flags, 0o644);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
    await mkdir(path.dirname(file), { recursive: true });
    return await openDescriptor(file, flags, 0o644);
  }
}

export class TempFileSink implements ChunkSink {
  readonly #file: string;
  readonly #highWaterMark: number;
  readonly #opened: Promise<number>;
  /** The open file's descriptor, for writes through; null until it is open and once it is closed. */
  #fd: number | null = null;
  /** The fsync in flight, which the close waits for. */
  #syncing: Promise<void> | null = null;
  /** Chunks not yet handed to a write; they go at `#queueOffset`, in order. */
  #queue: Buffer[] = [];
  #queueOffset = 0;
  /** Bytes queued or being written by the thread pool. */
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
    this.#opened.then(
      (fd) => {
        if (!this.#closed) this.#fd = fd;
      },
      (error: unknown) => this.#fail(error as Error),
    );
  }

  get path(): string {
    return this.#file;
  }

  write(chunk: Buffer): boolean {
    if (this.#error || this.#closed) return true; // the writer has failed or stopped: bytes are dropped
    if (this.#fd !== null && this.#queuedBytes >= this.#highWaterMark) return this.#writeThrough(this.#fd, chunk);
    this.#queue.push(chunk);
    this.#queuedBytes += chunk.length;
    this.#pumping ??= this.#pump();
    if (this.#queuedBytes < this.#highWaterMark) return true;
    this.#behind = true;
    return false;
  }

  /** A chunk it must not keep: written through at once once the file is open, else queued as a copy. */
  writeTransient(chunk: Buffer): boolean {
    if (this.#error || this.#closed) return true;
    if (this.#fd !== null) return this.#writeThrough(this.#fd, chunk);
    return this.write(Buffer.from(chunk));
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
    // destroy() meanwhile closed the descriptor: its number may already name another file.
    if (this.#closed) throw new Error(`${this.#file} was closed before it was ended`);
    const fd = await this.#opened;
    try {
      if (durable) await (this.#syncing = fsyncDescriptor(fd));
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
      const fd = await this.#opened.catch(() => null);
      while (this.#pumping) await this.#pumping;
      await this.#syncing?.catch(() => undefined);
      this.#fd = null;
      if (fd !== null) fs.closeSync(fd);
    })();
    return this.#closed;
  }

  async #pump(): Promise<void> {
    try {
      const fd = await this.#opened;
      while (this.#queue.length > 0 && !this.#error) {
        const batch = this.#queue;
        const offset = this.#queueOffset;
        this.#queue = [];
        const bytes = bytesOf(batch);
        this.#queueOffset += bytes;
        await writeAll(fd, batch, bytes, offset);
        this.#queuedBytes -= bytes;
        this.#drainIfCaughtUp();
      }
    } catch (error) {
      this.#fail(error as Error);
    } finally {
      this.#pumping = null;
    }
  }

  /** Writes what is queued and `chunk` synchronously; true when only the thread pool's write in progress is left behind. */
  #writeThrough(fd: number, chunk: Buffer): boolean {
    const queued = bytesOf(this.#queue);
    try {
      let offset = this.#queueOffset;
      for (const each of this.#queue) {
        writeAllSync(fd, each, offset);
        offset += each.length;
      }
      writeAllSync(fd, chunk, offset);
      this.#queueOffset = offset + chunk.length;
    } catch (error) {
      // Told after write() returns, as an asynchronous write failure would be.
      queueMicrotask(() => this.#fail(error as Error));
      return true;
    }
    this.#queue = [];
    this.#queuedBytes -= queued;
    if (this.#queuedBytes < this.#highWaterMark) {
      // A caller told to wait earlier still waits for 'drain'; told after write() returns.
      if (this.#behind) queueMicrotask(() => this.#drainIfCaughtUp());
      return true;
    }
    this.#behind = true; // the pool's write in progress tells 'drain' when it ends
    return false;
  }

  #drainIfCaughtUp(): void {
    if (!this.#behind || this.#queuedBytes >= this.#highWaterMark) return;
    this.#behind = false;
    for (const listener of this.#drainListeners) listener();
  }

  #fail(error: Error): void {
    if (this.#error) return;
    this.#error = error;
    this.#queue = [];
    for (const listener of this.#errorListeners) listener(error);
  }
}

/** writev() at `position` until every byte is in: a regular file may take less than asked (a full disk answers an error next). */
async function writeAll(fd: number, chunks: Buffer[], total: number, position: number): Promise<void> {
  let pending = chunks;
  let left = total;
  let at = position;
  while (left > 0) {
    const bytesWritten = await writeAt(fd, pending, at);
    left -= bytesWritten;
    at += bytesWritten;
    if (left > 0) pending = rest(pending, bytesWritten);
  }
}

function bytesOf(chunks: Buffer[]): number {
  let bytes = 0;
  for (const chunk of chunks) bytes += chunk.length;
  return bytes;
}

function writeAllSync(fd: number, chunk: Buffer, position: number): void {
  let written = 0;
  while (written < chunk.length) written += fs.writeSync(fd, chunk, written, chunk.length - written, position + written);
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
