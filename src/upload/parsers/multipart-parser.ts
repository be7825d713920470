import { createRequire } from 'node:module';
import { Busboy } from '@fastify/busboy';
import type { BusboyFileStream, BusboyInstance } from '@fastify/busboy';
import { ParseError } from './parse-error.ts';

/**
 * A synchronous push parser for `multipart/form-data` upload bodies, built on @fastify/busboy.
 *
 * Contract (the caller must know all of this):
 *
 * - Nothing is buffered. Every byte given to write() is parsed before write() returns: fileStart and
 *   fileData (and fileEnd of a file whose closing boundary is in the chunk) are called synchronously,
 *   in body order. The parser keeps only small bounded state between calls (a boundary-length
 *   lookbehind, one part's header block up to `maxHeaderBytes`, one field value up to
 *   `maxFieldBytes`, and the collected fields up to `maxTotalFieldBytes`).
 * - Backpressure: since the parser holds no file data there is nothing inside it to pause. fileData
 *   may return false ("my storage is behind"); write() then returns false, which means "pause the
 *   socket". There is no resume() on the parser: resume the socket when your storage drains and
 *   call write() again. A chunk written while you are behind is still delivered in full (the
 *   parser never queues), so the consumer must accept the few chunks already in flight.
 * - fileData chunks are subarrays of the Buffer given to write() or, for the few bytes busboy held
 *   back as a possible boundary, fresh copies; the parser never reuses or retains them.
 * - Ordering: fileStart(A), fileData(A)*, fileEnd(A), fileStart(B), ... and finish() last.
 *   A skipped file (fileStart returned false) gets no fileData and no fileEnd.
 * - Completion may be asynchronous: finish() comes only after end(), but busboy finalises the last
 *   parts (and emits the last fields) on process.nextTick, so finish() arrives either from inside
 *   end() (busboy was already done) or a few ticks later. A body without its closing boundary is
 *   known at once: error() is called from inside end(). After end() exactly one of finish()/error()
 *   is called (error() follows finish() only if finish() itself throws). Writes after end(),
 *   error() or destroy() are ignored and return false.
 * - Errors go to error(), exactly once, and nothing is called after it: a ParseError for a
 *   malformed body or a broken limit, or whatever a callback of yours threw (a throw from
 *   fileStart/fileData/fileEnd is caught, the parser is destroyed and error() receives it as is).
 *   write()/end() do not throw. Only the constructor throws, a ParseError for an unusable
 *   Content-Type (not multipart/form-data, or no boundary).
 * - "No file": the body parses but has no file part: finish() is called with `hasFile: false`;
 *   answering 400 "missing file" is the caller's job.
 * - Every file part is reported in order with its field name; choosing which one to store (the
 *   field `file`, else the first file) is the caller's job. A part is a file when it has a
 *   `filename` parameter, is named `file`, or is `application/octet-stream`; every other part is a
 *   text field. More than `maxFiles` file parts is an error (not silently ignored).
 * - Fields: `finish(fields)` has each text field's value as a string; a name given several times
 *   gives an array of its values in body order. Nameless fields are dropped.
 */

export interface MultipartFileInfo {
  /** The part's `name` parameter; '' when it has none. */
  fieldName: string;
  /** The part's `filename` parameter (base name only), or null. */
  fileName: string | null;
  /** The part's Content-Type, lower-cased without parameters; busboy reports 'text/plain' when the part declares none. */
  declaredType: string;
}

export interface MultipartSummary {
  /** At least one file part was seen (whether or not it was skipped). */
  hasFile: boolean;
  /** Number of file parts seen. */
  fileCount: number;
}

export interface MultipartEvents {
  /** A file part begins. Return false to skip it: its bytes are drained without fileData/fileEnd. */
  fileStart(info: MultipartFileInfo): boolean | void;
  /** The next bytes of the current file; return false when your storage is behind (write() then returns false). */
  fileData(chunk: Buffer): boolean | void;
  /** The current (not skipped) file is complete. */
  fileEnd(): void;
  /** The whole body is parsed. `fields` holds the text fields. */
  finish(fields: Record<string, string | string[]>, summary: MultipartSummary): void;
  /** The body is rejected (ParseError) or one of the callbacks threw (that error as is). Called once; nothing follows. */
  error(error: unknown): void;
}

export interface MultipartLimits {
  /** Bytes of one part's header block. */
  maxHeaderBytes: number;
  /** Parts of any kind. */
  maxParts: number;
  /** Text fields. */
  maxFields: number;
  /** Bytes of one text field's value. */
  maxFieldBytes: number;
  /** Bytes of all text fields' names and values together. */
  maxTotalFieldBytes: number;
  /** File parts. */
  maxFiles: number;
}

export const DEFAULT_MULTIPART_LIMITS: Readonly<MultipartLimits> = Object.freeze({
  maxHeaderBytes: 16 * 1024,
  maxParts: 1000,
  maxFields: 100,
  maxFieldBytes: 64 * 1024,
  maxTotalFieldBytes: 256 * 1024,
  maxFiles: 10,
});

// The parameter parser busboy itself uses, so the boundary we scan for is exactly busboy's.
const require = createRequire(import.meta.url);
const parseParams = require('@fastify/busboy/lib/utils/parseParams.js') as (header: string) => Array<string | [string, string]>;

/** Larger than any chunk: busboy's Writables then never report "full" and never queue a write. */
const NEVER_FULL = 2 ** 30;
const CRLF = Buffer.from('\r\n');
const DCRLF = Buffer.from('\r\n\r\n');
const DASH = 0x2d;
const EMPTY = Buffer.alloc(0);

/** Validates a multipart/form-data Content-Type and returns its boundary. */
export function multipartBoundary(contentType: string): string {
  let params: Array<string | [string, string]>;
  try {
    params = parseParams(contentType);
  } catch {
    throw new ParseError('Invalid Content-Type header');
  }
  const type = params[0];
  if (typeof type !== 'string' || type.toLowerCase() !== 'multipart/form-data') {
    throw new ParseError('Content-Type must be multipart/form-data');
  }
  for (const param of params.slice(1)) {
    if (Array.isArray(param) && param[0].toLowerCase() === 'boundary') {
      const boundary = param[1];
      if (boundary.length === 0 || boundary.length > 70) throw new ParseError('The multipart boundary must be 1-70 characters');
      return boundary;
    }
  }
  throw new ParseError('The multipart Content-Type has no boundary');
}

type ScanState = 'body' | 'dashes' | 'header' | 'epilogue';

/**
 * Follows the body's structure alongside busboy: finds every delimiter (so the parser can end the
 * current file synchronously and split busboy's input there), measures each part's header block
 * (busboy silently truncates oversized headers; we reject them), and notices the closing delimiter
 * (so a truncated body is known at end()). Matches exactly what busboy's Dicer matches: the
 * delimiter `CRLF--boundary`, with a CRLF assumed before the first byte of the body.
 */
export class BoundaryScanner {
  /** The closing delimiter has been seen; the rest of the body is epilogue. */
  finished = false;
  private readonly delimiter: Buffer;
  private readonly maxHeaderBytes: number;
  private state: ScanState = 'body';
  /** Stream bytes right before the next unscanned byte, for matches that straddle chunks. */
  private tail: Buffer = CRLF;
  private headerBytes = 0;

  constructor(boundary: string, maxHeaderBytes: number) {
    this.delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');
    this.maxHeaderBytes = maxHeaderBytes;
  }

  /** Offsets in `chunk` just past each delimiter that completes in it. Throws ParseError for an oversized header. */
  scan(chunk: Buffer): number[] {
    const cuts: number[] = [];
    const delimiterLength = this.delimiter.length;
    let pos = 0;
    for (;;) {
      switch (this.state) {
        case 'epilogue':
          return cuts;
        case 'body': {
          const end = this.find(this.delimiter, chunk, pos);
          if (end === -1) {
            this.keepTail(chunk, pos, delimiterLength - 1);
            return cuts;
          }
          cuts.push(end);
          pos = end;
          this.tail = EMPTY;
          this.state = 'dashes';
          break;
        }
        case 'dashes': {
          // Right after a delimiter: `--` closes the body. `tail` holds a lone '-' seen at a chunk's end.
          if (pos >= chunk.length) return cuts;
          if (this.tail.length === 0) {
            if (chunk[pos] !== DASH) {
              this.enterHeader(0);
              break;
            }
            if (pos + 1 >= chunk.length) {
              this.tail = Buffer.from('-');
              return cuts;
            }
            if (chunk[pos + 1] === DASH) {
              this.finish();
              return cuts;
            }
            this.enterHeader(0);
            break;
          }
          if (chunk[pos] === DASH) {
            this.finish();
            return cuts;
          }
          this.enterHeader(this.tail.length);
          break;
        }
        case 'header': {
          const headerEnd = this.find(DCRLF, chunk, pos);
          const delimiterEnd = this.find(this.delimiter, chunk, pos);
          const delimiterStart = delimiterEnd - delimiterLength;
          if (delimiterEnd !== -1 && (headerEnd === -1 || delimiterStart < headerEnd)) {
            // The header block never completed (busboy ignores such a part); a delimiter follows.
            this.countHeader(delimiterStart - pos, 0);
            cuts.push(delimiterEnd);
            pos = delimiterEnd;
            this.tail = EMPTY;
            this.state = 'dashes';
            break;
          }
          if (headerEnd !== -1) {
            this.countHeader(headerEnd - DCRLF.length - pos, 0);
            pos = headerEnd;
            this.tail = EMPTY;
            this.state = 'body';
            break;
          }
          // The last bytes may still turn out to start the terminator; do not hold them against the limit yet.
          this.countHeader(chunk.length - pos, DCRLF.length - 1);
          this.keepTail(chunk, pos, delimiterLength - 1);
          return cuts;
        }
      }
    }
  }

  private enterHeader(alreadyCounted: number): void {
    this.state = 'header';
    this.headerBytes = alreadyCounted;
  }

  private finish(): void {
    this.state = 'epilogue';
    this.finished = true;
    this.tail = EMPTY;
  }

  private countHeader(bytes: number, undecided: number): void {
    this.headerBytes += bytes;
    if (this.headerBytes - undecided > this.maxHeaderBytes) {
      throw new ParseError(`A multipart part has more than ${this.maxHeaderBytes} bytes of headers`);
    }
  }

  /**
   * Offset in `chunk` just past the first occurrence of `pattern` at or after `pos`, counting an
   * occurrence that starts in `tail` (the stream bytes right before chunk[pos]); -1 when none.
   */
  private find(pattern: Buffer, chunk: Buffer, pos: number): number {
    if (this.tail.length > 0) {
      // Only an occurrence that starts in the tail can end within pattern.length - 1 bytes of pos.
      const probe = Buffer.concat([this.tail, chunk.subarray(pos, pos + pattern.length - 1)]);
      const index = probe.indexOf(pattern);
      if (index !== -1) return pos + index + pattern.length - this.tail.length;
    }
    const index = chunk.indexOf(pattern, pos);
    return index === -1 ? -1 : index + pattern.length;
  }

  /** Remembers the last `size` stream bytes up to the chunk's end (a copy: the chunk is not retained). */
  private keepTail(chunk: Buffer, pos: number, size: number): void {
    const rest = chunk.subarray(Math.max(pos, chunk.length - size));
    const joined = this.tail.length > 0 ? Buffer.concat([this.tail, rest]) : Buffer.from(rest);
    this.tail = joined.length > size ? joined.subarray(joined.length - size) : joined;
  }
}

type State = 'open' | 'ending' | 'done' | 'failed';

interface CurrentFile {
  readonly stream: BusboyFileStream;
  readonly accepted: boolean;
  ended: boolean;
}

interface StreamWithState {
  _readableState: { sync: boolean };
}

function noop(): void {}

export class MultipartParser {
  private readonly events: MultipartEvents;
  private readonly limits: MultipartLimits;
  private readonly scanner: BoundaryScanner;
  private readonly busboy: BusboyInstance;
  private state: State = 'open';
  private file: CurrentFile | null = null;
  private fileCount = 0;
  private readonly fields: Record<string, string | string[]> = {};
  private fieldBytes = 0;
  private busboyFinished = false;
  /** The chunk being written, to tell its subarrays from busboy's own reused lookbehind buffer. */
  private input: Buffer = EMPTY;
  private inWrite = false;
  private pendingError: { error: unknown } | null = null;
  private behind = false;

  /** Throws ParseError when `contentType` is not multipart/form-data with a boundary. */
  constructor(contentType: string, events: MultipartEvents, limits: Partial<MultipartLimits> = {}) {
    this.events = events;
    this.limits = { ...DEFAULT_MULTIPART_LIMITS, ...limits };
    const boundary = multipartBoundary(contentType);
    this.scanner = new BoundaryScanner(boundary, this.limits.maxHeaderBytes);
    try {
      this.busboy = Busboy({
        headers: { 'content-type': contentType },
        highWaterMark: NEVER_FULL,
        fileHwm: NEVER_FULL,
        isPartAFile: (fieldName, partType, fileName) =>
          fileName !== undefined || fieldName === 'file' || partType === 'application/octet-stream',
        limits: {
          // Our scanner rejects big headers first; busboy must not truncate them before that.
          headerSize: this.limits.maxHeaderBytes + 1024,
          parts: this.limits.maxParts,
          fields: this.limits.maxFields,
          fieldSize: this.limits.maxFieldBytes,
          files: this.limits.maxFiles,
        },
      });
    } catch (error) {
      throw new ParseError('Invalid multipart Content-Type', { cause: error });
    }
    const busboy = this.busboy;
    busboy.on('file', (fieldName, stream, fileName, _encoding, mimeType) => this.onFile(fieldName, stream, fileName, mimeType));
    busboy.on('field', (name, value, _nameTruncated, valueTruncated) => this.onField(name, value, valueTruncated));
    busboy.on('partsLimit', () => this.fail(new ParseError(`The multipart body has more than ${this.limits.maxParts} parts`)));
    busboy.on('filesLimit', () => this.fail(new ParseError(`The multipart body has more than ${this.limits.maxFiles} files`)));
    busboy.on('fieldsLimit', () => this.fail(new ParseError(`The multipart body has more than ${this.limits.maxFields} fields`)));
    busboy.on('error', (error: unknown) => {
      const detail = error instanceof Error ? `: ${error.message}` : '';
      this.fail(new ParseError(`Malformed multipart body${detail}`, { cause: error }));
    });
    busboy.on('finish', () => {
      this.busboyFinished = true;
      this.maybeFinish();
    });
  }

  /**
   * Parses one chunk of the body and delivers its events before returning.
   * Returns false when fileData asked for a pause (see the backpressure contract above);
   * after end(), an error or destroy(), the chunk is ignored and false is returned.
   */
  write(chunk: Buffer): boolean {
    if (this.state !== 'open') return false;
    this.behind = false;
    this.inWrite = true;
    try {
      let cuts: number[];
      try {
        cuts = this.scanner.scan(chunk);
      } catch (error) {
        this.fail(error);
        return false;
      }
      let start = 0;
      for (const cut of cuts) {
        this.feed(chunk, start, cut);
        // A delimiter ends the part before it: all of its bytes have just been delivered.
        this.endFile();
        start = cut;
        if (this.state !== 'open') break;
      }
      if (this.state === 'open' && start < chunk.length) this.feed(chunk, start, chunk.length);
    } finally {
      this.inWrite = false;
      this.input = EMPTY;
      this.flushError();
    }
    return this.state === 'open' && !this.behind;
  }

  /** The body is complete. finish() or error() follows (see the contract above). */
  end(): void {
    if (this.state !== 'open') return;
    if (!this.scanner.finished) {
      this.fail(new ParseError('The multipart body is truncated: it ends before its closing boundary'));
      return;
    }
    this.state = 'ending';
    this.busboy.end();
    this.maybeFinish();
  }

  /** Stops parsing and drops all state; no callback is called afterwards. Safe to call from a callback. */
  destroy(): void {
    if (this.state === 'done' || this.state === 'failed') return;
    this.state = 'failed';
    this.teardown();
  }

  private feed(chunk: Buffer, start: number, end: number): void {
    if (start === end) return;
    this.input = chunk;
    this.busboy.write(chunk.subarray(start, end));
    // With never-full high-water marks busboy completes every write synchronously; if it ever queued
    // one, the events would arrive out of order, so treat that as a failure rather than go on.
    if (this.state === 'open' && this.busboy.writableLength !== 0) {
      this.fail(new Error('multipart parser: busboy deferred a write; events would be out of order'));
    }
  }

  private onFile(fieldName: string | undefined, stream: BusboyFileStream, fileName: string | undefined, mimeType: string): void {
    stream.on('error', noop); // busboy reports the same failure on itself
    if (this.state !== 'open' && this.state !== 'ending') {
      stream.resume();
      return;
    }
    this.endFile();
    this.fileCount += 1;
    // Busboy's own trick for its part streams: without it a new Readable buffers its first pushes
    // until the next tick; with it, 'data' is emitted synchronously from busboy's write.
    (stream as unknown as StreamWithState)._readableState.sync = false;
    const started = this.call(() =>
      this.events.fileStart({ fieldName: fieldName ?? '', fileName: fileName ?? null, declaredType: mimeType }),
    );
    if (!started.ok || (this.state !== 'open' && this.state !== 'ending')) {
      stream.resume();
      return;
    }
    const file: CurrentFile = { stream, accepted: started.value !== false, ended: false };
    this.file = file;
    stream.on('data', (data: Buffer) => this.onFileData(file, data));
    stream.on('end', () => {
      // Normally ended already, at its delimiter; this is a safety net.
      if (this.file === file) this.endFile();
    });
  }

  private onFileData(file: CurrentFile, data: Buffer): void {
    if (this.state !== 'open' && this.state !== 'ending') return;
    if (file !== this.file || file.ended) {
      this.fail(new Error('multipart parser: file data arrived after its end'));
      return;
    }
    if (!file.accepted || data.length === 0) return;
    const result = this.call(() => this.events.fileData(this.isInputView(data) ? data : Buffer.from(data)));
    if (result.ok && result.value === false) this.behind = true;
  }

  private endFile(): void {
    const file = this.file;
    if (!file || file.ended) return;
    file.ended = true;
    this.file = null;
    if (file.accepted && (this.state === 'open' || this.state === 'ending')) this.call(() => this.events.fileEnd());
  }

  private onField(name: string | undefined, value: string, truncated: boolean): void {
    if (this.state !== 'open' && this.state !== 'ending') return;
    const label = name === undefined ? 'A field' : `Field "${name.slice(0, 100)}"`;
    if (truncated) {
      this.fail(new ParseError(`${label} is larger than ${this.limits.maxFieldBytes} bytes`));
      return;
    }
    this.fieldBytes += Buffer.byteLength(value) + (name === undefined ? 0 : Buffer.byteLength(name));
    if (this.fieldBytes > this.limits.maxTotalFieldBytes) {
      this.fail(new ParseError(`The form fields are larger than ${this.limits.maxTotalFieldBytes} bytes in total`));
      return;
    }
    if (name === undefined) return;
    const previous = Object.hasOwn(this.fields, name) ? this.fields[name] : undefined;
    const next = previous === undefined ? value : Array.isArray(previous) ? [...previous, value] : [previous, value];
    // defineProperty: a field named __proto__ must stay an ordinary own property.
    Object.defineProperty(this.fields, name, { value: next, enumerable: true, writable: true, configurable: true });
  }

  private maybeFinish(): void {
    if (this.state !== 'ending' || !this.busboyFinished || this.inWrite) return;
    this.endFile();
    if (this.state !== 'ending') return;
    this.state = 'done';
    this.teardown();
    const fields = this.fields;
    const summary: MultipartSummary = { hasFile: this.fileCount > 0, fileCount: this.fileCount };
    try {
      this.events.finish(fields, summary);
    } catch (error) {
      this.events.error(error);
    }
  }

  /** Runs a consumer callback; a throw fails the parser with that error. */
  private call<T>(callback: () => T): { ok: true; value: T } | { ok: false } {
    try {
      return { ok: true, value: callback() };
    } catch (error) {
      this.fail(error);
      return { ok: false };
    }
  }

  private fail(error: unknown): void {
    if (this.state === 'done' || this.state === 'failed') return;
    this.state = 'failed';
    this.teardown();
    this.pendingError = { error };
    // Inside write() busboy is mid-call: report once it has returned.
    if (!this.inWrite) this.flushError();
  }

  private flushError(): void {
    const pending = this.pendingError;
    if (!pending) return;
    this.pendingError = null;
    this.events.error(pending.error);
  }

  private teardown(): void {
    this.file = null;
    this.input = EMPTY;
    // Listeners stay attached (they ignore everything now) so late busboy events cannot go unhandled.
    if (!this.busboy.destroyed) this.busboy.destroy();
  }

  private isInputView(data: Buffer): boolean {
    const input = this.input;
    return (
      data.buffer === input.buffer &&
      data.byteOffset >= input.byteOffset &&
      data.byteOffset + data.length <= input.byteOffset + input.length
    );
  }
}
