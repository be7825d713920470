/** What an upload body parser reports, synchronously, while chunks are written into it. */
export interface FileStart {
  /** The form field of a multipart file part ('' when it has no name); null for the JSON route. */
  fieldName: string | null;
  /**
   * The name the client gave the file, if known when the file starts: the part's `filename*` or
   * `filename` parameter (as sent, path included); for JSON, the `fileName` member if it came
   * before `file` and is a string.
   */
  fileName: string | null;
  /** The type the client declared (the part's Content-Type, 'text/plain' when it has none; the data URI's type, or null). */
  declaredType: string | null;
}

/**
 * The events of one upload body, in this order: fileStart, (fileData*, fileEnd)?, ... then exactly
 * one of finish() or error(); nothing follows either. A file whose fileStart answered false gets
 * no fileData and no fileEnd. A callback that throws ends the parse: error() receives what it threw.
 */
export interface BodyParserEvents {
  /** A file begins; answer false to have its bytes skipped. */
  fileStart(info: FileStart): boolean;
  /**
   * The next bytes of the current file: a view of the chunk given to write() (or a small copy of
   * bytes held back across chunks). The parser never writes to it; the consumer may keep it.
   */
  fileData(chunk: Buffer): void;
  fileEnd(): void;
  /** The whole body is parsed and has a file; `fields` are the non-file values. */
  finish(fields: Record<string, unknown>): void;
  /** The body is refused (a 400 ServiceError: malformed, truncated, over a limit, no file) or a callback threw. */
  error(error: unknown): void;
}

/**
 * A synchronous push parser over one upload body. Every event a chunk completes is delivered
 * before write() returns; finish() or error() before end() returns. write() and end() never
 * throw; after end(), error() or destroy() they do nothing. The parser holds no file bytes
 * between calls beyond a delimiter's length, so there is nothing in it to pause: backpressure is
 * the consumer's (pause the socket).
 */
export interface BodyParser {
  write(chunk: Buffer): void;
  end(): void;
  /** Stops parsing; no callback follows. Safe to call from a callback. */
  destroy(): void;
}
