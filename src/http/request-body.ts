import { badRequest, payloadTooLarge, serviceUnavailable } from '../errors/errors.ts';
import { BodySpool } from './body-spool.ts';
import type { MemoryBudget } from './memory-budget.ts';

/** What the transport underneath a body can do: uWS in the service, a stub in unit tests. */
export interface BodySource {
  pause(): void;
  resume(): void;
}

export interface BodyConsumer {
  /**
   * Called with chunks the consumer owns (already copied out of the transport's buffer), or with
   * `transient` ones: views of the transport's memory, valid only during the call (see takesWhilePaused).
   */
  chunk(data: Buffer, transient?: boolean): void;
  /** Whether it takes transient chunks now although it paused the body (see UploadBodyConsumer); absent: never. */
  takesWhilePaused?(): boolean;
  /** Whether it would only copy a chunk it is given now, so that a transient one spares the copy before (see UploadBodyConsumer); absent: never. */
  takesTransient?(): boolean;
  end(): void;
  abort(reason: Error): void;
}

/**
 * Text PostgreSQL cannot store: NUL, and UTF-16 surrogates without their pair (valid JSON escapes
 * such as "\\ud800", but not Unicode text: `text` would silently hold U+FFFD, `jsonb` refuses them).
 * Refused as 400 here instead of failing as a 500 in SQL.
 */
const UNSTORABLE_TEXT = /[\u0000\p{Cs}]/u;

export class ClientAbortedError extends Error {
  override name = 'ClientAbortedError';
  constructor() {
    super('The client closed the connection');
  }
}

/** How a body holds what arrives while it is paused. */
export interface BodyBuffering {
  /** Bytes one body always may hold in memory; beyond them, further chunks go to a spool file until the backlog drains. */
  memoryBytes: number;
  /**
   * More memory for one body, past `memoryBytes`: up to `perBody` bytes, taken from a budget that
   * all bodies share and given back as the backlog drains. Absent: `memoryBytes` only.
   */
  extra?: { perBody: number; shared: MemoryBudget };
  /** Where spool files are created (and unlinked at once). */
  spoolDirectory: string;
}

/** Read-back size from a spool: large enough to keep storage writes efficient. */
const SPOOL_READ_BYTES = 512 * 1024;

/** One buffer for the synchronous spool drains of the whole process: what it holds is handed over as transient. */
let scratch: Buffer | null = null;
function spoolScratch(): Buffer {
  scratch ??= Buffer.allocUnsafeSlow(SPOOL_READ_BYTES);
  return scratch;
}

/**
 * A request body as it arrives. The transport pushes chunks in; one consumer
 * takes them out, and may pause and resume the flow. Until a consumer attaches,
 * the socket stays paused and the few chunks already in flight are held, so
 * nothing is read that a refusal would have to discard.
 *
 * A paused transport may still deliver (uWS reads on while its receive buffer
 * fills up, see BodySpool): such chunks form a backlog, in memory up to
 * `memoryBytes` and then in a spool file, that is handed over in order when the
 * consumer resumes, before the socket is resumed. Without `buffering` the whole
 * backlog stays in memory (unit tests).
 */
export class RequestBody {
  /** Declared Content-Length, or null for a chunked body. */
  readonly declaredLength: number | null;
  private readonly source: BodySource;
  private readonly buffering: BodyBuffering | null;
  private readonly hasBody: boolean;
  private consumer: BodyConsumer | null = null;
  /** The backlog: oldest in `queue`, newer ones in `spool`. */
  private queue: Buffer[] = [];
  private queuedBytes = 0;
  /** Bytes at the head of `queue` that were read back from the spool (held for the read, not for the body's allowance). */
  private spooledBackBytes = 0;
  private spool: BodySpool | null = null;
  private readingSpool = false;
  private consumerPaused = false;
  private sourcePaused = false;
  private ended = false;
  private endDelivered = false;
  private discarded = false;
  private abortReason: Error | null = null;
  private received = 0;

  constructor(source: BodySource, declaredLength: number | null, hasBody: boolean, buffering: BodyBuffering | null = null) {
    this.source = source;
    this.declaredLength = declaredLength;
    this.hasBody = hasBody;
    this.buffering = buffering;
    if (hasBody) this.pauseSource();
    else this.ended = true;
  }

  get bytesReceived(): number {
    return this.received;
  }

  /** True once the whole body has arrived from the client. */
  get complete(): boolean {
    return this.ended;
  }

  get aborted(): boolean {
    return this.abortReason !== null;
  }

  /** Bytes received but not yet handed to the consumer. */
  get backlogBytes(): number {
    return this.queuedBytes + (this.spool?.pending ?? 0);
  }

  // ---- transport side ----

  /** `data` may be the transport's own memory: it is copied (or spooled) before this returns. */
  push(data: Uint8Array, isLast: boolean): void {
    this.received += data.length;
    if (data.length > 0 && !this.abortReason && !this.discarded) {
      if (this.consumer && !this.consumerPaused && this.backlogBytes === 0) this.deliver(this.consumer, data);
      else this.hold(data);
    }
    if (isLast) {
      this.ended = true;
      this.flush();
    }
  }

  /** A chunk straight from the transport: as a view when the consumer would only copy it, otherwise as a copy. */
  private deliver(consumer: BodyConsumer, data: Uint8Array): void {
    if (consumer.takesTransient?.() === true) consumer.chunk(Buffer.from(data.buffer, data.byteOffset, data.length), true);
    else consumer.chunk(Buffer.from(data));
  }

  /** The transport failed (the client left); ignored once the whole body has arrived. */
  fail(reason: Error): void {
    if (!this.ended) this.abortWith(reason);
  }

  // ---- consumer side ----

  pause(): void {
    this.consumerPaused = true;
    this.pauseSource();
  }

  resume(): void {
    this.consumerPaused = false;
    this.flush();
  }

  /** The rest of the body will not be read (the response closes the connection): drops the backlog and what still arrives. */
  discard(): void {
    this.discarded = true;
    this.dropBacklog();
    this.pauseSource();
  }

  /**
   * The exchange is over: what nobody read of the body is dropped, with what still arrives, and its
   * memory goes back to the shared budget. Unlike discard(), the socket is left as it is (it may
   * already serve the next request).
   */
  releaseUnread(): void {
    if (this.endDelivered) return;
    this.discarded = true;
    this.dropBacklog();
  }

  /** Attaches the one consumer and starts the flow of chunks. */
  consume(consumer: BodyConsumer): void {
    if (this.consumer) throw new Error('request body is already being consumed');
    this.consumer = consumer;
    if (this.abortReason) {
      consumer.abort(this.abortReason);
      return;
    }
    this.flush();
  }

  private hold(data: Uint8Array): void {
    // Before memory: held chunks would be copies, allocated and collected again on every pause.
    if (!this.readingSpool && this.consumer?.takesWhilePaused?.()) {
      this.handOver(this.consumer, data);
      return;
    }
    this.holdInMemoryOrSpool(data);
  }

  private holdInMemoryOrSpool(data: Uint8Array): void {
    const spooling = (this.spool?.pending ?? 0) > 0;
    if (!this.buffering || (!spooling && this.allowInMemory(data.length))) {
      this.queue.push(Buffer.from(data));
      this.queuedBytes += data.length;
      return;
    }
    try {
      this.spool ??= BodySpool.open(this.buffering.spoolDirectory);
      this.spool.append(data);
    } catch (error) {
      this.abortWith(serviceUnavailable('The upload could not be buffered; try again.', 5, error));
    }
  }

  /**
   * The backlog in memory and then `data`, to a consumer that takes them although it paused the
   * body; `data` as a view of the transport's memory, which the consumer must not keep.
   */
  private handOver(consumer: BodyConsumer, data: Uint8Array): void {
    // The consumer may stop taking on the way (a reservation to wait for): the rest is held as usual.
    const takes = () => !this.abortReason && !this.discarded && consumer.takesWhilePaused?.() === true;
    while (this.queue.length > 0 && takes()) {
      const chunk = this.queue.shift()!;
      this.removeFromHead(chunk.length);
      consumer.chunk(chunk);
    }
    if (this.spool && this.spool.pending > 0 && this.queue.length === 0 && !this.drainSpoolSync(consumer, this.spool, takes)) return;
    if (this.abortReason || this.discarded) return;
    if (this.backlogBytes === 0 && takes()) consumer.chunk(Buffer.from(data.buffer, data.byteOffset, data.length), true);
    else this.holdInMemoryOrSpool(data);
  }

  /** Bytes of the backlog in memory that came from the transport (not read back from the spool). */
  private get heldBytes(): number {
    return this.queuedBytes - this.spooledBackBytes;
  }

  /** What holding `held` bytes takes from the shared budget: the part past the body's own allowance. */
  private extraFor(held: number): number {
    return Math.max(0, held - this.buffering!.memoryBytes);
  }

  /** Whether `bytes` more fit the body's own allowance, or else its extra one (taken from the shared budget here). */
  private allowInMemory(bytes: number): boolean {
    const { memoryBytes, extra } = this.buffering!;
    const held = this.heldBytes;
    if (held + bytes <= memoryBytes) return true;
    if (!extra || held + bytes > memoryBytes + extra.perBody) return false;
    return extra.shared.take(this.extraFor(held + bytes) - this.extraFor(held));
  }

  /** `bytes` leave the head of the backlog: what they took from the shared budget goes back to it. */
  private removeFromHead(bytes: number): void {
    const heldBefore = this.heldBytes;
    this.spooledBackBytes -= Math.min(bytes, this.spooledBackBytes);
    this.queuedBytes -= bytes;
    this.buffering?.extra?.shared.give(this.extraFor(heldBefore) - this.extraFor(this.heldBytes));
  }

  /** Hands the backlog to the consumer while it is not paused; then resumes the socket or ends. */
  private flush(): void {
    const consumer = this.consumer;
    // A discarded body delivers nothing more, its end included (the rest may still be drained from the socket).
    if (!consumer || this.abortReason || this.readingSpool || this.endDelivered || this.discarded) return;
    while (!this.consumerPaused && this.queue.length > 0) {
      const chunk = this.queue.shift()!;
      this.removeFromHead(chunk.length);
      consumer.chunk(chunk);
      if (this.abortReason) return;
    }
    if (this.consumerPaused) return;
    if (this.spool && this.spool.pending > 0 && consumer.takesTransient?.() === true && !this.drainSpoolAsViews(consumer, this.spool)) return;
    if (this.spool && this.spool.pending > 0) {
      this.readSpool(this.spool);
      return;
    }
    // Resume even when the body already ended: the socket serves the next keep-alive request.
    if (this.hasBody && !this.discarded) this.resumeSource();
    if (this.ended) {
      this.endDelivered = true;
      this.closeSpool();
      consumer.end();
    }
  }

  /**
   * The spool read back synchronously through the one scratch buffer and handed over as views, for
   * as long as the consumer takes them: it copies them anyway, and a fresh buffer per read was
   * garbage for V8 to collect. False when the flush must stop here (paused, aborted, discarded).
   */
  private drainSpoolAsViews(consumer: BodyConsumer, spool: BodySpool): boolean {
    const takes = () => !this.consumerPaused && !this.abortReason && !this.discarded && consumer.takesTransient?.() === true;
    return this.drainSpoolSync(consumer, spool, takes) && !this.consumerPaused && !this.abortReason && !this.discarded;
  }

  /** The spool read back synchronously through the one scratch buffer, as views, while `takes()`; false once it failed (the body is aborted). */
  private drainSpoolSync(consumer: BodyConsumer, spool: BodySpool, takes: () => boolean): boolean {
    try {
      spool.drainSync(spoolScratch(), takes, (piece) => consumer.chunk(piece, true));
      return true;
    } catch (error) {
      this.abortWith(serviceUnavailable('The upload could not be buffered; try again.', 5, error));
      return false;
    }
  }

  private readSpool(spool: BodySpool): void {
    this.readingSpool = true;
    spool.read(SPOOL_READ_BYTES).then(
      (data) => {
        this.readingSpool = false;
        if (this.abortReason || this.discarded) return;
        if (data.length > 0) {
          // Older than anything else in the backlog, so it goes first.
          this.queue.unshift(data);
          this.queuedBytes += data.length;
          this.spooledBackBytes += data.length;
        }
        this.flush();
      },
      (error: unknown) => {
        this.readingSpool = false;
        this.abortWith(serviceUnavailable('The upload could not be buffered; try again.', 5, error));
      },
    );
  }

  /** Ends the body with `reason`, also after it arrived whole (a spool that cannot be read back). */
  private abortWith(reason: Error): void {
    if (this.abortReason || this.endDelivered) return;
    this.abortReason = reason;
    this.dropBacklog();
    this.consumer?.abort(reason);
  }

  private dropBacklog(): void {
    this.removeFromHead(this.queuedBytes);
    this.queue = [];
    this.closeSpool();
  }

  private closeSpool(): void {
    this.spool?.close();
    this.spool = null;
  }

  private pauseSource(): void {
    if (this.sourcePaused) return;
    this.sourcePaused = true;
    this.source.pause();
  }

  private resumeSource(): void {
    if (!this.sourcePaused) return;
    this.sourcePaused = false;
    this.source.resume();
  }

  /** Reads the whole body into memory; only for small bodies bounded by `limit`. */
  async bytes(limit: number): Promise<Buffer> {
    if (this.declaredLength !== null && this.declaredLength > limit) throw payloadTooLarge(limit);
    return new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let done = false;
      this.consume({
        chunk: (data) => {
          if (done) return;
          size += data.length;
          if (size > limit) {
            done = true;
            this.discard();
            reject(payloadTooLarge(limit));
            return;
          }
          chunks.push(data);
        },
        end: () => {
          if (done) return;
          done = true;
          resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
        },
        abort: (reason) => {
          if (done) return;
          done = true;
          reject(reason);
        },
      });
    });
  }

  /** Reads and parses a JSON body; an empty body reads as `{}`. */
  async json(limit: number): Promise<unknown> {
    const data = await this.bytes(limit);
    if (data.length === 0) return {};
    let unstorable = false;
    let value: unknown;
    try {
      value = JSON.parse(data.toString('utf8'), (key, member: unknown) => {
        if (UNSTORABLE_TEXT.test(key) || (typeof member === 'string' && UNSTORABLE_TEXT.test(member))) unstorable = true;
        return member;
      });
    } catch {
      throw badRequest('The request body is not valid JSON.');
    }
    if (unstorable) throw badRequest('Text in the request body must not contain NUL characters or unpaired surrogates (\\u0000, \\ud800).');
    return value;
  }
}
