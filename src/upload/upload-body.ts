/** Receives a body's chunks in order, then its end or its abort. */
export interface UploadBodyConsumer {
  /** Called with chunks the consumer owns. */
  chunk(data: Buffer): void;
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
