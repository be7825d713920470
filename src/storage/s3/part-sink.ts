// Where an s3 writer's bytes go: part buffers of its own, each filled by copying the caller's
// chunks into it (one copy per byte, transient chunks included) and sent whole once the next byte
// needs room. A buffer whose part S3 has answered is filled again, so a large upload allocates
// at most `partsInFlight + 2` buffers (see below) instead of one (or, through a stream, two or three) per part; the
// fresh external memory per part was what made V8 collect most of the 100 MiB upload's time
// (docs/performance.md).
//
// A body that never outgrows its first buffer is not sent here: end() hands it back for one
// PutObject, and its buffer goes back to the pool once S3 has answered (release()). The first buffer
// is the body's announced size, rounded up to a size class, when that fits a part (a screenshot
// takes a buffer of about its own size, not 5 MiB); a body larger than that moves into a part-sized
// buffer and goes on from there.
//
// Backpressure: write() returns false once the buffers of `partsInFlight` parts and the one being
// filled are full or in flight. One spare buffer past them takes what a caller that cannot stop at
// once still delivers (takesWhileBehind(): uWS goes on reading a paused socket until the kernel's
// receive buffer is empty, ~3.4 MiB from a client on the same machine, which would otherwise go
// through the body spool's file and back). What finds no room at all (a copy, for a transient chunk)
// waits in a backlog that is moved into buffers as parts are answered; 'drain' follows once it is
// gone and a write would not need the spare buffer.
import { EventEmitter } from 'node:events';
import type { ChunkSink } from '../stream-object-writer.ts';

/**
 * The size of buffer a body announced at `bytes` is gathered in: `bytes` rounded up to an eighth
 * of its power of two (at most 12.5 % more), so that bodies of nearly the same size share buffers.
 */
export function firstBufferClass(bytes: number): number {
  if (bytes <= 8) return Math.max(1, bytes);
  const step = 2 ** (Math.floor(Math.log2(bytes - 1)) - 3);
  return Math.ceil(bytes / step) * step;
}

/**
 * Free buffers shared by a store's writers, so that one upload after another reuses them instead of
 * making V8 collect (and the kernel back) fresh memory for each: part buffers (at most `keep` of
 * them, all of `size` bytes) and the first buffers of bodies announced to fit a part, by size class
 * (firstBufferClass), at most `keep × size` bytes of them in all. Buffers of other sizes are not kept.
 */
export class PartBufferPool {
  readonly size: number;
  readonly #keep: number;
  readonly #free: Buffer[] = [];
  readonly #freeFirst = new Map<number, Buffer[]>();
  readonly #keepFirstBytes: number;
  #freeFirstBytes = 0;

  constructor(size: number, keep: number) {
    this.size = size;
    this.#keep = keep;
    this.#keepFirstBytes = keep * size;
  }

  take(size: number): Buffer {
    if (size === this.size) {
      const buffer = this.#free.pop();
      if (buffer) return buffer;
    }
    return Buffer.allocUnsafeSlow(size);
  }

  /** A buffer for a body announced at `bytes`: its size class, or a part buffer when the class is no smaller than the writer's part. */
  takeFirst(bytes: number, partSize: number): Buffer {
    const size = firstBufferClass(bytes);
    if (size >= partSize) return this.take(partSize);
    const buffer = this.#freeFirst.get(size)?.pop();
    if (!buffer) return Buffer.allocUnsafeSlow(size);
    this.#freeFirstBytes -= size;
    return buffer;
  }

  /** Only for a buffer no request may still read: one whose part or body S3 has answered. */
  give(buffer: Buffer): void {
    const size = buffer.length;
    if (size === this.size) {
      if (this.#free.length < this.#keep) this.#free.push(buffer);
      return;
    }
    if (size !== firstBufferClass(size) || this.#freeFirstBytes + size > this.#keepFirstBytes) return;
    let free = this.#freeFirst.get(size);
    if (!free) this.#freeFirst.set(size, (free = []));
    free.push(buffer);
    this.#freeFirstBytes += size;
  }
}

export interface PartSinkOptions {
  partSize: number;
  /** Parts sent at once; the sink fills one buffer more, and has one spare (see above). */
  partsInFlight: number;
  /** The first buffer's size, when the body is announced to fit a part; otherwise a part. */
  firstBufferSize?: number;
  pool: PartBufferPool;
  /** Sends a full part (numbered from 1); resolves once S3 has answered it. A rejection stops the sink. */
  sendPart(partNumber: number, body: Buffer): Promise<void>;
}

/** What end() gathered: the whole body, never sent, or the number of parts S3 has answered. */
export type GatheredBody = { kind: 'whole'; body: Buffer } | { kind: 'parts'; count: number };

interface Ending {
  resolve(body: GatheredBody): void;
  reject(error: unknown): void;
}

interface CutPart {
  partNumber: number;
  buffer: Buffer;
  length: number;
}

/** What a released sink answers end() with; one object, since an Error's stack trace costs more than the rest of release(). */
const RELEASED = { error: new Error('The body was released') };

export class PartSink extends EventEmitter implements ChunkSink {
  readonly #options: PartSinkOptions;
  /** Buffers counted as room: the parts in flight and the one being filled. */
  readonly #regularBuffers: number;
  /** Those and the spare. */
  readonly #maxBuffers: number;
  /** Buffers held: the one being filled, the cut parts waiting and those in flight. */
  #buffers = 0;
  #current: Buffer | null = null;
  #filled = 0;
  #partsCut = 0;
  readonly #waiting: CutPart[] = [];
  #sending = 0;
  /** Bytes that found no room, oldest first; the head's first `#backlogOffset` are already copied. */
  #backlog: Buffer[] = [];
  #backlogOffset = 0;
  /** write() returned false: 'drain' is owed. */
  #behind = false;
  #ending: Ending | null = null;
  #stopped: { error: unknown } | null = null;

  constructor(options: PartSinkOptions) {
    super();
    this.#options = options;
    this.#regularBuffers = options.partsInFlight + 1;
    this.#maxBuffers = options.partsInFlight + 2;
  }

  write(chunk: Buffer): boolean {
    return this.#take(chunk, false);
  }

  writeTransient(chunk: Buffer): boolean {
    return this.#take(chunk, true);
  }

  /** Whether a write now, although write() asked to wait, finds room (in the spare buffer) rather than going to the backlog. */
  takesWhileBehind(): boolean {
    if (this.#stopped) return true;
    return this.#backlog.length === 0 && (this.#currentHasRoom() || this.#buffers < this.#maxBuffers);
  }

  /** Waits until every byte is in a buffer and every cut part answered; then the body or the part count. */
  end(): Promise<GatheredBody> {
    if (this.#stopped) return Promise.reject(this.#stopped.error);
    if (this.#ending) return Promise.reject(new Error('end() called twice'));
    const ended = new Promise<GatheredBody>((resolve, reject) => {
      this.#ending = { resolve, reject };
    });
    this.#pump();
    return ended;
  }

  /** After the whole body end() gave has been stored (S3 answered its PutObject): its buffer goes back to the pool. */
  release(): void {
    if (this.#stopped || this.#ending || this.#partsCut > 0 || !this.#current) return;
    this.#options.pool.give(this.#current);
    this.#current = null;
    this.#stopped = RELEASED;
  }

  /** Drops every byte held; end() rejects with `error`. The buffers are not reused (a cancelled request may still read one). */
  stop(error: unknown): void {
    if (this.#stopped) return;
    this.#stopped = { error };
    this.#current = null;
    this.#waiting.length = 0;
    this.#backlog = [];
    this.#ending?.reject(error);
    this.#ending = null;
  }

  #take(chunk: Buffer, transient: boolean): boolean {
    if (this.#stopped || chunk.length === 0) return true;
    let rest = chunk;
    if (this.#backlog.length === 0) {
      const reached = this.#fill(chunk, 0);
      if (reached === chunk.length) {
        if (this.#hasRoom()) return true;
        this.#behind = true;
        return false;
      }
      rest = chunk.subarray(reached);
    }
    this.#backlog.push(transient ? Buffer.from(rest) : rest);
    this.#behind = true;
    return false;
  }

  /** Copies `chunk` from `offset` on into buffers while there is room; returns the offset reached. */
  #fill(chunk: Buffer, offset: number): number {
    while (offset < chunk.length && this.#makeRoom()) {
      const copied = chunk.copy(this.#current!, this.#filled, offset);
      this.#filled += copied;
      offset += copied;
    }
    return offset;
  }

  /** Whether a byte written now would find room without waiting for S3 or taking the spare buffer. */
  #hasRoom(): boolean {
    return this.#buffers < this.#regularBuffers || (this.#buffers === this.#regularBuffers && this.#currentHasRoom());
  }

  #currentHasRoom(): boolean {
    return this.#current !== null && this.#filled < this.#current.length;
  }

  /** Room in the current buffer: grows a first buffer the body outgrew, cuts a full one, takes another if one is free. */
  #makeRoom(): boolean {
    const { partSize, pool, firstBufferSize } = this.#options;
    const current = this.#current;
    if (current && this.#filled < current.length) return true;
    if (current && current.length < partSize) {
      const part = pool.take(partSize);
      current.copy(part, 0, 0, this.#filled);
      pool.give(current);
      this.#current = part;
      return true;
    }
    if (current) this.#cut();
    if (this.#buffers >= this.#maxBuffers) return false;
    this.#current = this.#partsCut === 0 && firstBufferSize !== undefined ? pool.takeFirst(firstBufferSize, partSize) : pool.take(partSize);
    this.#filled = 0;
    this.#buffers++;
    return true;
  }

  #cut(): void {
    this.#waiting.push({ partNumber: ++this.#partsCut, buffer: this.#current!, length: this.#filled });
    this.#current = null;
    this.#filled = 0;
    this.#sendWaiting();
  }

  #sendWaiting(): void {
    while (this.#waiting.length > 0 && this.#sending < this.#options.partsInFlight) {
      const part = this.#waiting.shift()!;
      this.#sending++;
      this.#options.sendPart(part.partNumber, part.buffer.subarray(0, part.length)).then(
        () => {
          this.#sending--;
          if (this.#stopped) return;
          this.#buffers--;
          this.#options.pool.give(part.buffer);
          this.#pump();
        },
        (error: unknown) => {
          this.#sending--;
          this.stop(error);
        },
      );
    }
  }

  /** Moves the backlog into buffers, sends what is cut, settles end() once all is answered, and owes no 'drain'. */
  #pump(): void {
    while (this.#backlog.length > 0) {
      const head = this.#backlog[0]!;
      const reached = this.#fill(head, this.#backlogOffset);
      if (reached < head.length) {
        this.#backlogOffset = reached;
        break;
      }
      this.#backlog.shift();
      this.#backlogOffset = 0;
    }
    this.#sendWaiting();
    if (this.#backlog.length > 0) return;
    if (this.#ending) this.#settleEnd(this.#ending);
    else if (this.#behind && this.#hasRoom()) {
      this.#behind = false;
      this.emit('drain');
    }
  }

  #settleEnd(ending: Ending): void {
    if (this.#partsCut === 0) {
      this.#ending = null;
      ending.resolve({ kind: 'whole', body: this.#current ? this.#current.subarray(0, this.#filled) : Buffer.alloc(0) });
      return;
    }
    if (this.#current && this.#filled > 0) this.#cut(); // the last part, which may be short
    if (this.#waiting.length > 0 || this.#sending > 0) return;
    this.#ending = null;
    ending.resolve({ kind: 'parts', count: this.#partsCut });
  }
}
