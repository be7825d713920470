/** What an upload body parser reports, synchronously, while chunks are written into it. */
export interface FileStart {
  /** The form field of a multipart file part; null for the JSON route. */
  fieldName: string | null;
  /** The name the client gave the file, if any. */
  fileName: string | null;
  /** The type the client declared (part Content-Type, or the data URI's type). */
  declaredType: string | null;
}

export interface BodyParserEvents {
  /** A file begins; answer false to have its bytes skipped. */
  fileStart(info: FileStart): boolean;
  fileData(chunk: Buffer): void;
  fileEnd(): void;
  /** The whole body is parsed (maybe a few ticks after end()); `fields` are the non-file values. */
  finish(fields: Record<string, unknown>): void;
  /** The body is rejected (a ServiceError such as 400) or a callback threw; nothing follows. */
  error(error: unknown): void;
}

/** A push parser over one upload body; write() and end() never throw, errors go to error(). */
export interface BodyParser {
  write(chunk: Buffer): void;
  end(): void;
  destroy(): void;
}
