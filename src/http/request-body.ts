import { badRequest, payloadTooLarge } from '../errors/errors.ts';

/** What the transport underneath a body can do: uWS in the service, a stub in unit tests. */
export interface BodySource {
  pause(): void;
  resume(): void;
}

export interface BodyConsumer {
  /** Called with chunks the consumer owns (already copied out of the transport's buffer). */
  chunk(data: Buffer): void;
  end(): void;
  abort(reason: Error): void;
}

export class ClientAbortedError extends Error {
  override name = 'ClientAbortedError';
  constructor() {
    super('The client closed the connection');
  }
}

/**
 * A request body as it arrives. The transport pushes chunks in; one consumer
 * takes them out. Until a consumer attaches, the socket stays paused and the few
 * chunks already in flight are held, so nothing is read that a refusal would
 * have to discard.
 */
export class RequestBody {
  /** Declared Content-Length, or null for a chunked body. */
  readonly declaredLength: number | null;
  private readonly source: BodySource;
  private pending: Buffer[] = [];
  private consumer: BodyConsumer | null = null;
  private ended = false;
  private abortReason: Error | null = null;
  private received = 0;
  private readonly hasBody: boolean;

  constructor(source: BodySource, declaredLength: number | null, hasBody: boolean) {
    this.source = source;
    this.declaredLength = declaredLength;
    this.hasBody = hasBody;
    if (hasBody) source.pause();
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

  // ---- transport side ----

  push(data: Buffer, isLast: boolean): void {
    this.received += data.length;
    if (this.consumer) {
      if (data.length > 0) this.consumer.chunk(data);
    } else if (data.length > 0) {
      this.pending.push(data);
    }
    if (isLast) {
      this.ended = true;
      this.consumer?.end();
    }
  }

  fail(reason: Error): void {
    if (this.abortReason || this.ended) return;
    this.abortReason = reason;
    this.consumer?.abort(reason);
  }

  // ---- consumer side ----

  pause(): void {
    this.source.pause();
  }

  resume(): void {
    this.source.resume();
  }

  /** Attaches the one consumer and starts the flow of chunks. */
  consume(consumer: BodyConsumer): void {
    if (this.consumer) throw new Error('request body is already being consumed');
    this.consumer = consumer;
    if (this.abortReason) {
      consumer.abort(this.abortReason);
      return;
    }
    const pending = this.pending;
    this.pending = [];
    for (const chunk of pending) consumer.chunk(chunk);
    // Resume even when the body already ended: the socket serves the next keep-alive request.
    if (this.hasBody) this.source.resume();
    if (this.ended) consumer.end();
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
            this.source.pause();
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
    try {
      return JSON.parse(data.toString('utf8'));
    } catch {
      throw badRequest('The request body is not valid JSON.');
    }
  }
}
