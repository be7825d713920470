/** Receives a body's chunks in order, then its end or its abort. */
export interface UploadBodyConsumer {
  /**
   * Called with chunks the consumer owns, or with `transient` ones: views of the transport's memory,
   * valid only during the call, which the consumer must neither keep nor hand on to be kept.
   */
  chunk(data: Buffer, transient?: boolean): void;
  /**
   * Whether the consumer, though it paused the body, can take a transient chunk now without holding
   * more than its storage allows itself (the storage writes through, or keeps room for this): a
   * transport that delivers after pause() then hands chunks over instead of buffering them.
   * Absent: never.
   */
  takesWhilePaused?(): boolean;
  /**
   * Whether the consumer would only copy a chunk given to it now (its storage copies every chunk
   * into buffers of its own), so that a transport hands over a view instead of copying it first.
   * Absent: never.
   */
  takesTransient?(): boolean;
  end(): void;
  abort(reason: Error): void;
}

/**
 * What an upload needs of its request body: the transport (src/http's
 * RequestBody in the service) implements it, so this layer does not depend on
 * the HTTP layer.
 */
export interface UploadBody {
  /** Declared Content-Length, or null for a chunked body. */
  readonly declaredLength: number | null;
  /** True once the whole body has arrived from the client. */
  readonly complete: boolean;
  /** Attaches the one consumer; chunks flow until paused. */
  consume(consumer: UploadBodyConsumer): void;
  pause(): void;
  resume(): void;
}
