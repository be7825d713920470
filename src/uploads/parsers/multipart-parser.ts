import { badRequest } from '../../errors/errors.ts';
import type { BodyParser, BodyParserEvents } from './body-parser.ts';
import { parseHeaderParams } from './header-params.ts';

/**
 * A streaming `multipart/form-data` parser (RFC 7578, RFC 2046 framing) for upload bodies.
 *
 * - One scan: each byte is searched once for the delimiter `CRLF--boundary` (Buffer.indexOf),
 *   with a CRLF assumed before the body's first byte; a delimiter cut by a chunk's end is held
 *   back (at most its length minus one byte, copied) and completed from the next chunk.
 * - File parts stream: their bytes go to fileData as views of the written chunk. A part is a
 *   file when its Content-Disposition has a `filename` or `filename*` parameter, its name is
 *   `file`, or its Content-Type is application/octet-stream. Every file part is offered to
 *   fileStart in order; the consumer chooses (answers false to skip one).
 * - Other parts are text fields, collected (UTF-8) within limits and handed to finish(); a name
 *   given several times gives an array of its values; nameless fields are dropped.
 * - A part without a form-data Content-Disposition is skipped (it still counts as a part).
 * - Part headers: at most `maxHeaderBytes` between the delimiter and the blank line; lines end in
 *   CRLF, folded lines are joined, names are case-insensitive, the first of a repeated header
 *   counts. Text after a delimiter on its line (other than spaces), a bare CR or LF, or a line
 *   without a header name is a malformed body.
 * - The body must end with the close delimiter `--boundary--`; what follows it is ignored.
 *   A body without a file part is refused (400) at end().
 */

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

const BOUNDARY_CHARACTERS = /^[\x20-\x7e]*[\x21-\x7e]$/;

/** Validates a multipart/form-data Content-Type and returns its boundary; throws a 400 otherwise. */
export function multipartBoundary(contentType: string): string {
  const { value, params } = parseHeaderParams(contentType);
  if (value.toLowerCase() !== 'multipart/form-data') throw badRequest('Content-Type must be multipart/form-data', 'content-type');
  const boundary = params.get('boundary');
  if (boundary === undefined) throw badRequest('The multipart Content-Type has no boundary', 'content-type');
  if (boundary.length === 0 || boundary.length > 70) throw badRequest('The multipart boundary must be 1-70 characters', 'content-type');
  if (!BOUNDARY_CHARACTERS.test(boundary)) throw badRequest('The multipart boundary has characters other than printable ASCII', 'content-type');
  return boundary;
}

const CR = 0x0d;
const HEADER_END = '\r\n\r\n';
const OPTIONAL_SPACE = /^[ \t]*$/;

type State = 'preamble' | 'headers' | 'part' | 'epilogue' | 'closed';
type PartKind = 'file' | 'field' | 'skip';

function malformed(detail: string): Error {
  return badRequest(`Malformed multipart body: ${detail}`);
}

export class MultipartParser implements BodyParser {
  private readonly events: BodyParserEvents;
  private readonly limits: MultipartLimits;
  /** `CRLF--boundary`. Its only CR is its first byte, which the partial-match logic relies on. */
  private readonly delimiter: Buffer;
  private state: State = 'preamble';
  /** Bytes of the delimiter matched at the end of the previous chunk (the CRLF before the body counts). */
  private held = 2;
  /** The current part's header block so far, one character per byte. */
  private header = '';

  private kind: PartKind = 'skip';
  private fieldName: string | null = null;
  private fieldPieces: Buffer[] = [];
  private fieldBytes = 0;
  private totalFieldBytes = 0;
  private readonly fields: Record<string, unknown> = {};
  private parts = 0;
  private fieldCount = 0;
  private files = 0;

  /** `boundary` as returned by multipartBoundary(). */
  constructor(boundary: string, events: BodyParserEvents, limits: Partial<MultipartLimits> = {}) {
    this.events = events;
    this.limits = { ...DEFAULT_MULTIPART_LIMITS, ...limits };
    this.delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');
  }

  write(chunk: Buffer): void {
    if (this.state === 'closed' || this.state === 'epilogue') return;
    try {
      this.parse(chunk);
    } catch (error) {
      this.fail(error);
    }
  }

  end(): void {
    if (this.state === 'closed') return;
    try {
      if (this.state !== 'epilogue') throw badRequest('The multipart body is truncated: it ends before its closing boundary');
      if (this.files === 0) throw badRequest('The form contains no file', 'file');
      this.state = 'closed';
      this.events.finish(this.fields);
    } catch (error) {
      this.fail(error);
    }
  }

  destroy(): void {
    this.state = 'closed';
    this.fieldPieces = [];
    this.header = '';
  }

  private fail(error: unknown): void {
    if (this.state === 'closed') return;
    this.destroy();
    this.events.error(error);
  }

  private parse(chunk: Buffer): void {
    let pos = 0;
    while (pos < chunk.length) {
      switch (this.state) {
        case 'preamble':
        case 'part':
          pos = this.scanBody(chunk, pos);
          break;
        case 'headers':
          pos = this.scanHeaders(chunk, pos);
          break;
        default:
          return;
      }
    }
  }

  /** Body bytes up to the next delimiter; returns where parsing goes on (the chunk's end when none completes). */
  private scanBody(chunk: Buffer, pos: number): number {
    const delimiter = this.delimiter;
    if (this.held > 0) {
      const held = this.held;
      const available = Math.min(delimiter.length - held, chunk.length - pos);
      if (chunk.compare(delimiter, held, held + available, pos, pos + available) === 0) {
        if (held + available < delimiter.length) {
          this.held = held + available;
          return chunk.length;
        }
        this.held = 0;
        this.endPart();
        return pos + available;
      }
      // Not a delimiter after all: the held bytes were content (none of them can start one, see `delimiter`).
      this.held = 0;
      this.content(Buffer.from(delimiter.subarray(0, held)), 0, held);
      if (this.state === 'closed') return chunk.length;
    }
    const at = chunk.indexOf(delimiter, pos);
    if (at !== -1) {
      this.content(chunk, pos, at);
      if (this.state === 'closed') return chunk.length;
      this.endPart();
      return at + delimiter.length;
    }
    const held = this.partialDelimiterAtEnd(chunk, pos);
    this.content(chunk, pos, chunk.length - held);
    this.held = held;
    return chunk.length;
  }

  /** How many of the chunk's last bytes (after `pos`) are the beginning of a delimiter. */
  private partialDelimiterAtEnd(chunk: Buffer, pos: number): number {
    const from = Math.max(pos, chunk.length - this.delimiter.length + 1);
    for (let i = chunk.length - 1; i >= from; i--) {
      if (chunk[i] !== CR) continue;
      // The delimiter's only CR is its first byte: this is the one candidate.
      const length = chunk.length - i;
      return chunk.compare(this.delimiter, 0, length, i, chunk.length) === 0 ? length : 0;
    }
    return 0;
  }

  /** A delimiter completed: the part before it is whole; a header block (or `--`) follows. */
  private endPart(): void {
    if (this.state === 'part') {
      if (this.kind === 'file') this.events.fileEnd();
      else if (this.kind === 'field') this.endField();
    }
    if (this.state === 'closed') return;
    this.state = 'headers';
    this.header = '';
  }

  private scanHeaders(chunk: Buffer, pos: number): number {
    const { maxHeaderBytes } = this.limits;
    const before = this.header.length;
    // Never more than the limit plus a terminator: an endless header block is refused, not buffered.
    const take = Math.min(chunk.length - pos, maxHeaderBytes + HEADER_END.length - before);
    const header = this.header + chunk.toString('latin1', pos, pos + take);
    if (header.length >= 2 && header.charCodeAt(0) === 0x2d && header.charCodeAt(1) === 0x2d) {
      // `--boundary--`: the close delimiter. Whatever follows is epilogue.
      this.header = '';
      this.state = 'epilogue';
      return chunk.length;
    }
    const end = header.indexOf(HEADER_END, Math.max(0, before - HEADER_END.length + 1));
    if (end === -1) {
      if (header.length > maxHeaderBytes + HEADER_END.length - 1) throw this.headersTooLarge();
      this.header = header;
      return pos + take;
    }
    if (end > maxHeaderBytes) throw this.headersTooLarge();
    this.header = '';
    this.startPart(header.slice(0, end));
    return pos + end + HEADER_END.length - before;
  }

  private headersTooLarge(): Error {
    return badRequest(`A multipart part has more than ${this.limits.maxHeaderBytes} bytes of headers`);
  }

  private startPart(block: string): void {
    this.parts += 1;
    if (this.parts > this.limits.maxParts) throw badRequest(`The multipart body has more than ${this.limits.maxParts} parts`);
    const headers = parsePartHeaders(block);
    this.state = 'part';
    this.kind = 'skip';
    const disposition = headers.get('content-disposition');
    if (disposition === undefined) return;
    const { value, params } = parseHeaderParams(disposition);
    if (value.toLowerCase() !== 'form-data') return;
    const name = params.get('name') ?? null;
    const fileName = params.get('filename*') ?? params.get('filename') ?? null;
    const contentType = headers.get('content-type');
    const declaredType = (contentType === undefined ? '' : parseHeaderParams(contentType).value.toLowerCase()) || 'text/plain';
    if (fileName !== null || name === 'file' || declaredType === 'application/octet-stream') {
      this.files += 1;
      if (this.files > this.limits.maxFiles) throw badRequest(`The multipart body has more than ${this.limits.maxFiles} files`);
      const accepted = this.events.fileStart({ fieldName: name ?? '', fileName, declaredType });
      if (accepted && this.state === 'part') this.kind = 'file';
      return;
    }
    this.fieldCount += 1;
    if (this.fieldCount > this.limits.maxFields) throw badRequest(`The multipart body has more than ${this.limits.maxFields} fields`);
    this.kind = 'field';
    this.fieldName = name;
    this.fieldPieces = [];
    this.fieldBytes = 0;
    if (name !== null) this.countFieldBytes(Buffer.byteLength(name));
  }

  private content(chunk: Buffer, start: number, end: number): void {
    if (end <= start || this.state !== 'part') return;
    if (this.kind === 'file') {
      this.events.fileData(start === 0 && end === chunk.length ? chunk : chunk.subarray(start, end));
    } else if (this.kind === 'field') {
      const length = end - start;
      this.fieldBytes += length;
      if (this.fieldBytes > this.limits.maxFieldBytes) {
        const label = this.fieldName === null ? 'A field' : `Field "${this.fieldName.slice(0, 100)}"`;
        throw badRequest(`${label} is larger than ${this.limits.maxFieldBytes} bytes`);
      }
      this.countFieldBytes(length);
      this.fieldPieces.push(Buffer.from(chunk.subarray(start, end)));
    }
  }

  private countFieldBytes(bytes: number): void {
    this.totalFieldBytes += bytes;
    if (this.totalFieldBytes > this.limits.maxTotalFieldBytes) {
      throw badRequest(`The form fields are larger than ${this.limits.maxTotalFieldBytes} bytes in total`);
    }
  }

  private endField(): void {
    const name = this.fieldName;
    const value = Buffer.concat(this.fieldPieces, this.fieldBytes).toString('utf8');
    this.fieldPieces = [];
    if (name === null) return;
    const previous = Object.hasOwn(this.fields, name) ? this.fields[name] : undefined;
    const next = previous === undefined ? value : Array.isArray(previous) ? [...previous, value] : [previous, value];
    // defineProperty: a field named __proto__ must stay an ordinary own property.
    Object.defineProperty(this.fields, name, { value: next, enumerable: true, writable: true, configurable: true });
  }
}

/**
 * A part's header block (everything between the delimiter and the blank line) into its headers,
 * by lower-case name, first value kept. The block's first line is the rest of the delimiter line.
 */
function parsePartHeaders(block: string): Map<string, string> {
  const headers = new Map<string, string>();
  const lines = block.split('\r\n');
  if (!OPTIONAL_SPACE.test(lines[0]!)) throw malformed('text after a boundary delimiter');
  // The previous header's name; null when it repeated an earlier one (ignored), undefined before the first.
  let previous: string | null | undefined;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.indexOf('\r') !== -1 || line.indexOf('\n') !== -1) throw malformed('a bare line break in a part header');
    const first = line.charCodeAt(0);
    if ((first === 0x20 || first === 0x09) && previous !== undefined) {
      // An obsolete folded line continues the previous header.
      if (previous !== null) headers.set(previous, `${headers.get(previous)!} ${line.trim()}`);
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) throw malformed('a part header line without a name');
    const name = line.slice(0, colon).trim().toLowerCase();
    previous = headers.has(name) ? null : name;
    if (previous !== null) headers.set(name, line.slice(colon + 1).trim());
  }
  return headers;
}
