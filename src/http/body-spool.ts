import { randomUUID } from 'node:crypto';
import { closeSync, ftruncateSync, mkdirSync, openSync, read, readSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A file-backed FIFO for request body bytes that arrive while the body is paused.
 *
 * uWS keeps reading a socket after pause() as long as each read fills its whole
 * 512 KiB receive buffer, so a sender faster than storage (any loopback client)
 * pushes on regardless. Holding those bytes in memory made one 250 MB upload cost
 * hundreds of MB of RSS. Appends are synchronous on purpose: a write to the page
 * cache is about as fast as the copy it replaces, and it keeps the read loop from
 * outrunning the disk. The file is unlinked as soon as it is opened, so a crash
 * leaves nothing behind and the space returns when the descriptor closes.
 */
export class BodySpool {
  readonly #fd: number;
  #writePosition = 0;
  #readPosition = 0;
  #reading = false;
  #closeRequested = false;
  #closed = false;

  private constructor(fd: number) {
    this.#fd = fd;
  }

  static open(directory: string): BodySpool {
    mkdirSync(directory, { recursive: true });
    const path = join(directory, `${randomUUID()}.spool`);
    const fd = openSync(path, 'w+', 0o600);
    try {
      unlinkSync(path);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
    return new BodySpool(fd);
  }

  /** Bytes appended and not yet read back. */
  get pending(): number {
    return this.#writePosition - this.#readPosition;
  }

  append(data: Uint8Array): void {
    if (this.#closeRequested) throw new Error('append() after close()');
    let written = 0;
    while (written < data.length) {
      written += writeSync(this.#fd, data, written, data.length - written, this.#writePosition + written);
    }
    this.#writePosition += data.length;
  }

  /** Reads the oldest pending bytes, at most `maxBytes`; one read at a time. Empty once closed. */
  read(maxBytes: number): Promise<Buffer> {
    if (this.#reading) return Promise.reject(new Error('a read is already in progress'));
    const size = Math.min(maxBytes, this.pending);
    if (this.#closeRequested || size === 0) return Promise.resolve(Buffer.alloc(0));
    this.#reading = true;
    const target = Buffer.allocUnsafe(size);
    return new Promise<Buffer>((resolve, reject) => {
      read(this.#fd, target, 0, size, this.#readPosition, (error, bytesRead) => {
        this.#reading = false;
        if (this.#closeRequested) {
          this.#closeNow();
          resolve(Buffer.alloc(0));
          return;
        }
        if (error) {
          reject(error);
          return;
        }
        this.#readPosition += bytesRead;
        if (this.#readPosition === this.#writePosition) this.#rewind();
        resolve(bytesRead === size ? target : target.subarray(0, bytesRead));
      });
    });
  }

  /**
   * Reads the pending bytes synchronously, in order, into `scratch` (reused: each piece is valid
   * only during its call of `each`) for as long as `more()` says, starting the file over once all
   * are read. Not while a read() is in progress.
   */
  drainSync(scratch: Buffer, more: () => boolean, each: (piece: Buffer) => void): void {
    if (this.#reading) throw new Error('a read is already in progress');
    while (this.pending > 0 && !this.#closeRequested && more()) {
      const size = Math.min(scratch.length, this.pending);
      const bytesRead = readSync(this.#fd, scratch, 0, size, this.#readPosition);
      if (bytesRead === 0) throw new Error('the spool file ended before its pending bytes');
      this.#readPosition += bytesRead;
      if (this.#readPosition === this.#writePosition) this.#rewind();
      each(scratch.subarray(0, bytesRead));
    }
  }

  /** Releases the file; a read in progress finishes first (its descriptor must not be reused under it). */
  close(): void {
    this.#closeRequested = true;
    if (!this.#reading) this.#closeNow();
  }

  /** Everything was read back: start again at offset 0 so the file does not grow past one backlog. */
  #rewind(): void {
    this.#readPosition = 0;
    this.#writePosition = 0;
    ftruncateSync(this.#fd, 0);
  }

  #closeNow(): void {
    if (this.#closed) return;
    this.#closed = true;
    closeSync(this.#fd);
  }
}
