import { badRequest, missingArgument } from '../../errors/errors.ts';
import { Base64StreamDecoder, invalidBase64 } from './base64-decoder.ts';
import type { BodyParser, BodyParserEvents } from './body-parser.ts';

/** Refuses a JSON upload body declared as anything but JSON (400), from its Content-Type before any byte is read. */
export function requireJsonContentType(contentType: string | undefined): void {
  if (contentType !== undefined && !/json/i.test(contentType)) {
    throw badRequest('The body must be JSON (application/json)', 'content-type');
  }
}

/**
 * A streaming parser for JSON upload bodies (RFC 8259):
 *
 *   {"file": "<data URI or base64>", "fileName": "...", "public": true, "folder": "...", "tags": [...]}
 *
 * in any member order.
 *
 * - The `file` string is never held: its text is unescaped, checked and base64-decoded as it
 *   arrives (whole 4-character quanta, at most 3 characters carried to the next chunk) and the
 *   bytes go to fileData. Base64 is strict (see Base64StreamDecoder): the standard alphabet,
 *   padding only at the end, CR, LF and space ignored (as JSON escapes `\r` `\n`, or a raw space;
 *   a raw CR or LF is not JSON). A data URI (`data:<type>[;params];base64,`, at most
 *   `maxDataUriHeader` characters up to its comma) gives the declared type.
 * - fileStart is called once the data URI header (if any) is complete; its fileName is the
 *   `fileName` member when that came before `file` and is a string.
 * - Every other top-level member is collected as its JSON text (key and value within
 *   `maxFieldBytes`, all of them within `maxTotalFieldBytes`, nesting within `maxFieldDepth`)
 *   and parsed with JSON.parse when it ends; finish() gets them. A key given twice keeps its last
 *   value (as JSON.parse does); `file` given twice is refused. Invalid UTF-8 in those strings
 *   becomes U+FFFD.
 * - The top level is checked byte by byte: one object, whitespace only around it. A body cut short
 *   is "truncated"; a body without `file` is refused with MissingArgument at end().
 */

export interface JsonUploadLimits {
  /** Bytes of one top-level member other than `file`: its key and its value's JSON text. */
  maxFieldBytes: number;
  /** The same, for all members other than `file` together (keys of `file` included). */
  maxTotalFieldBytes: number;
  /** Levels of arrays/objects inside one member's value (`"tags": ["a"]` is 1). */
  maxFieldDepth: number;
  /** Characters of a data URI's header, up to and including its comma. */
  maxDataUriHeader: number;
}

export const DEFAULT_JSON_UPLOAD_LIMITS: Readonly<JsonUploadLimits> = Object.freeze({
  maxFieldBytes: 64 * 1024,
  maxTotalFieldBytes: 256 * 1024,
  maxFieldDepth: 8,
  maxDataUriHeader: 256,
});

type State =
  | 'start' // before the top-level object
  | 'firstKey' // after `{`: a key or `}`
  | 'key' // after `,`: a key
  | 'keyText' // inside a key
  | 'colon'
  | 'value' // after `:`
  | 'fileText' // inside the file string
  | 'member' // inside another member's value
  | 'next' // after a value: `,` or `}`
  | 'done' // after the object: whitespace only
  | 'closed';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Text of the file string handed on at once; a chunk's raw text may be longer. */
const FILE_BLOCK = 64 * 1024;
const DATA_PREFIX = 'data:';
const MEDIA_TYPE = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/;
const PARAMETER = /^[a-z0-9!#$&^_.+-]+=[^;,]*$/i;
const CONTROL = /[\x00-\x1f]/;
/** Control characters other than CR and LF (which are refused raw, and allowed escaped). */
const OTHER_CONTROL = /[\x00-\x09\x0b\x0c\x0e-\x1f]/;
const ABOVE_LATIN1 = /[^\x00-\xff]/;
/** What an escaped character may be inside base64: the alphabet, padding and the whitespace that is ignored. */
const BASE64_CHARACTER = /^[A-Za-z0-9+/=\r\n ]$/;
const SIMPLE_ESCAPES: Record<number, string> = { 0x22: '"', 0x5c: '\\', 0x2f: '/', 0x62: '\b', 0x66: '\f', 0x6e: '\n', 0x72: '\r', 0x74: '\t' };
const HEX4 = /^[0-9a-fA-F]{4}$/;
const HIGH_BYTES = /[\x80-\xff]/;
const NEEDS_JSON_PARSE = /[\x00-\x1f\\]/;

function isWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09;
}

function defineMember(target: Record<string, unknown>, key: string, value: unknown): void {
  // Like JSON.parse: a key named __proto__ is an ordinary own property.
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

export class JsonUploadParser implements BodyParser {
  private readonly events: BodyParserEvents;
  private readonly limits: JsonUploadLimits;
  private state: State = 'start';
  /** Bytes of the body before the current chunk (for error positions). */
  private offset = 0;
  private readonly fields: Record<string, unknown> = {};
  private hasFile = false;
  private totalBytes = 0;

  // The key being read, then the member value being collected: its bytes, one character each.
  private text = '';
  private memberBytes = 0;
  private escaped = false;
  private key = '';
  private depth = 0;
  private inString = false;
  /** The member's value is a number or literal: it ends at the first character that cannot continue it. */
  private scalar = false;

  // The file string.
  private fileMode: 'prefix' | 'base64' = 'prefix';
  private fileText = '';
  /** An escape sequence cut by a chunk's end. */
  private fileEscape = '';
  private fileAccepted = false;
  /** An escape before the data URI decision gave a character above U+00FF (which base64 cannot hold). */
  private escapedAboveLatin1 = false;
  private decoder: Base64StreamDecoder | null = null;

  constructor(events: BodyParserEvents, limits: Partial<JsonUploadLimits> = {}) {
    this.events = events;
    this.limits = { ...DEFAULT_JSON_UPLOAD_LIMITS, ...limits };
  }

  write(chunk: Buffer): void {
    if (this.state === 'closed') return;
    try {
      this.parse(chunk);
      if (this.state === 'fileText') this.flushFile(false);
      this.offset += chunk.length;
    } catch (error) {
      this.fail(error);
    }
  }

  end(): void {
    if (this.state === 'closed') return;
    try {
      if (this.state === 'start') throw badRequest('The request body must be a JSON object');
      if (this.state !== 'done') throw badRequest('The JSON body is truncated');
      if (!this.hasFile) throw missingArgument('file');
      this.state = 'closed';
      this.events.finish(this.fields);
    } catch (error) {
      this.fail(error);
    }
  }

  destroy(): void {
    this.state = 'closed';
    this.text = '';
    this.fileText = '';
    this.decoder = null;
  }

  private fail(error: unknown): void {
    if (this.state === 'closed') return;
    this.destroy();
    this.events.error(error);
  }

  private parse(chunk: Buffer): void {
    let pos = 0;
    const length = chunk.length;
    while (pos < length) {
      switch (this.state) {
        case 'fileText':
          pos = this.scanFile(chunk, pos);
          continue;
        case 'keyText':
          pos = this.scanKey(chunk, pos);
          continue;
        case 'member':
          pos = this.scanMember(chunk, pos);
          continue;
        case 'closed':
          return;
        default:
          break;
      }
      const code = chunk[pos]!;
      if (isWhitespace(code)) {
        pos++;
        continue;
      }
      switch (this.state) {
        case 'start':
          if (code !== 0x7b) throw badRequest('The request body must be a JSON object');
          this.state = 'firstKey';
          break;
        case 'firstKey':
        case 'key':
          if (code === QUOTE) this.startKey();
          else if (code === 0x7d && this.state === 'firstKey') this.state = 'done';
          else throw this.unexpected(code, pos);
          break;
        case 'colon':
          if (code !== 0x3a) throw this.unexpected(code, pos);
          this.state = 'value';
          break;
        case 'value':
          if (this.key === 'file') {
            if (code !== QUOTE) throw badRequest('file must be a string', 'file');
            this.startFile();
          } else {
            this.startMember(code);
            continue; // the value's first character is the member's too
          }
          break;
        case 'next':
          if (code === 0x2c) this.state = 'key';
          else if (code === 0x7d) this.state = 'done';
          else throw this.unexpected(code, pos);
          break;
        case 'done':
          throw badRequest('The JSON body has data after its object');
      }
      pos++;
    }
  }

  private unexpected(code: number, pos: number): Error {
    const what = code >= 0x21 && code <= 0x7e ? `'${String.fromCharCode(code)}'` : `byte 0x${code.toString(16).padStart(2, '0')}`;
    return badRequest(`The JSON body is malformed: unexpected ${what} at byte ${this.offset + pos}`);
  }

  // ---- keys

  private startKey(): void {
    this.state = 'keyText';
    this.text = '';
    this.memberBytes = 0;
    this.escaped = false;
  }

  private scanKey(chunk: Buffer, pos: number): number {
    let end = pos;
    let closed = false;
    for (; end < chunk.length; end++) {
      const code = chunk[end]!;
      if (this.escaped) this.escaped = false;
      else if (code === BACKSLASH) this.escaped = true;
      else if (code === QUOTE) {
        closed = true;
        break;
      }
    }
    this.collect(chunk, pos, end, true);
    if (!closed) return end;
    const text = this.collected();
    let key = text;
    // Escapes and control characters (which are not JSON) are left to JSON.parse.
    if (NEEDS_JSON_PARSE.test(text)) {
      try {
        key = JSON.parse(`"${text}"`) as string;
      } catch {
        throw badRequest('The JSON body is malformed: a key is not a valid JSON string');
      }
    }
    if (key === 'file' && this.hasFile) throw badRequest('The JSON body has more than one "file" member', 'file');
    this.key = key;
    this.state = 'colon';
    return end + 1;
  }

  /** Counts a key's or member's bytes against the limits and keeps them. */
  private collect(chunk: Buffer, start: number, end: number, inKey: boolean): void {
    const bytes = end - start;
    if (bytes === 0) return;
    this.memberBytes += bytes;
    this.totalBytes += bytes;
    const { maxFieldBytes, maxTotalFieldBytes } = this.limits;
    if (this.totalBytes > maxTotalFieldBytes) {
      throw badRequest(`The JSON members other than "file" are larger than ${maxTotalFieldBytes} bytes in total`);
    }
    if (this.memberBytes > maxFieldBytes) {
      throw badRequest(inKey ? `A JSON key is longer than ${maxFieldBytes} bytes` : `"${this.label()}" is larger than ${maxFieldBytes} bytes`);
    }
    this.text += chunk.toString('latin1', start, end);
  }

  /** The collected bytes as text (UTF-8, invalid sequences as U+FFFD); the collection is reset. */
  private collected(): string {
    const text = this.text;
    this.text = '';
    return HIGH_BYTES.test(text) ? Buffer.from(text, 'latin1').toString('utf8') : text;
  }

  private label(): string {
    return this.key.length > 100 ? `${this.key.slice(0, 100)}...` : this.key;
  }

  // ---- members other than file

  private startMember(code: number): void {
    this.state = 'member';
    this.text = '';
    this.depth = 0;
    this.inString = false;
    this.escaped = false;
    this.scalar = code !== QUOTE && code !== 0x7b && code !== 0x5b;
  }

  private scanMember(chunk: Buffer, pos: number): number {
    let end = pos;
    let complete = false;
    if (this.scalar) {
      // A number or literal: its characters; JSON.parse judges them.
      for (; end < chunk.length; end++) {
        const code = chunk[end]!;
        if (!((code >= 0x30 && code <= 0x39) || (code >= 0x61 && code <= 0x7a) || (code >= 0x41 && code <= 0x5a) || code === 0x2b || code === 0x2d || code === 0x2e)) {
          complete = true;
          break;
        }
      }
    } else {
      for (; end < chunk.length; end++) {
        const code = chunk[end]!;
        if (this.inString) {
          if (this.escaped) this.escaped = false;
          else if (code === BACKSLASH) this.escaped = true;
          else if (code === QUOTE) {
            this.inString = false;
            if (this.depth === 0) {
              complete = true;
              end++;
              break;
            }
          }
        } else if (code === QUOTE) {
          this.inString = true;
        } else if (code === 0x7b || code === 0x5b) {
          this.depth++;
          if (this.depth > this.limits.maxFieldDepth) throw badRequest(`"${this.label()}" nests deeper than ${this.limits.maxFieldDepth} levels`);
        } else if (code === 0x7d || code === 0x5d) {
          this.depth--;
          if (this.depth === 0) {
            complete = true;
            end++;
            break;
          }
        }
      }
    }
    this.collect(chunk, pos, end, false);
    if (!complete) return end;
    const text = this.collected();
    if (text.length === 0) throw this.unexpected(chunk[end]!, end);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw badRequest(`The JSON body is malformed: the value of "${this.label()}" is not valid JSON`);
    }
    defineMember(this.fields, this.key, value);
    this.state = 'next';
    return end;
  }

  // ---- the file string

  private startFile(): void {
    this.hasFile = true;
    this.state = 'fileText';
    this.fileMode = 'prefix';
    this.fileText = '';
    this.fileEscape = '';
    this.escapedAboveLatin1 = false;
  }

  private scanFile(chunk: Buffer, pos: number): number {
    if (this.fileEscape.length > 0) {
      // Complete the escape sequence cut by the previous chunk (at most 6 characters long).
      const wanted = Math.min(6 - this.fileEscape.length, chunk.length - pos);
      const joined = this.fileEscape + chunk.toString('latin1', pos, pos + wanted);
      this.fileEscape = '';
      const used = this.escape(joined, 0);
      if (used === -1) {
        this.fileEscape = joined;
        return chunk.length;
      }
      pos += used - (joined.length - wanted);
    }
    // The closing quote is found once per chunk; escapes (MIME line breaks as \r\n) may be many.
    let quote = chunk.indexOf(QUOTE, pos);
    if (quote === -1) quote = chunk.length;
    while (pos < quote) {
      let slash = chunk.indexOf(BACKSLASH, pos);
      if (slash === -1 || slash > quote) slash = quote;
      if (slash > pos) this.rawFileRun(chunk, pos, slash);
      if (slash === quote) {
        pos = quote;
        break;
      }
      const text = chunk.toString('latin1', slash, Math.min(slash + 6, chunk.length));
      const used = this.escape(text, 0);
      if (used === -1) {
        this.fileEscape = text;
        return chunk.length;
      }
      pos = slash + used;
      // An escaped quote (\") was inside the escape: find the closing quote again.
      if (pos > quote) {
        quote = chunk.indexOf(QUOTE, pos);
        if (quote === -1) quote = chunk.length;
      }
    }
    if (pos >= chunk.length) return chunk.length;
    this.endFile();
    return pos + 1;
  }

  /** Decodes the escape at text[at] (a backslash); returns its length, or -1 when `text` ends inside it. */
  private escape(text: string, at: number): number {
    if (text.length < at + 2) return -1;
    const code = text.charCodeAt(at + 1);
    let character: string;
    let length = 2;
    if (code === 0x75) {
      if (text.length < at + 6) return -1;
      const hex = text.slice(at + 2, at + 6);
      if (!HEX4.test(hex)) throw badRequest('The JSON body is malformed: a bad \\u escape in file');
      character = String.fromCharCode(parseInt(hex, 16));
      length = 6;
    } else {
      const simple = SIMPLE_ESCAPES[code];
      if (simple === undefined) throw badRequest('The JSON body is malformed: a bad escape in file');
      character = simple;
    }
    // Escaped, a control character other than CR or LF is never valid here; so any left in the text is raw (see flushFile).
    if ((this.fileMode === 'base64' && !BASE64_CHARACTER.test(character)) || OTHER_CONTROL.test(character)) throw invalidBase64();
    if (character.charCodeAt(0) > 0xff) this.escapedAboveLatin1 = true;
    this.fileText += character;
    return length;
  }

  /**
   * A run of raw file characters, handed on in strings of at most FILE_BLOCK: V8 puts a longer
   * string in its large-object space, one memory mapping (and its page faults) per string, which
   * cost more than the decoding of a 100 MiB upload (docs/performance-log.md).
   */
  private rawFileRun(chunk: Buffer, start: number, end: number): void {
    for (let at = start; at < end && this.state === 'fileText'; at += FILE_BLOCK) {
      this.rawFileText(chunk.toString('latin1', at, Math.min(end, at + FILE_BLOCK)));
    }
  }

  /** Characters of the file string as they were in the body (not escapes). */
  private rawFileText(text: string): void {
    // Raw CR and LF are not JSON (other control characters are not base64 either, so they are refused there).
    if (text.indexOf('\n') !== -1 || text.indexOf('\r') !== -1) {
      throw badRequest('The JSON body is malformed: a raw line break in the file string');
    }
    this.fileText = this.fileText.length === 0 ? text : this.fileText + text;
    if (this.fileText.length >= FILE_BLOCK) this.flushFile(false);
  }

  /** Hands the file text so far on: to the data URI check while undecided, then to the decoder. */
  private flushFile(last: boolean): void {
    let text = this.fileText;
    if (this.fileMode === 'prefix') {
      if (text.length < DATA_PREFIX.length && !last) return;
      if (text.slice(0, DATA_PREFIX.length).toLowerCase() !== DATA_PREFIX) {
        this.startDecoding(null);
      } else {
        // Until the data URI's comma, the text waits here (at most maxDataUriHeader characters).
        const comma = text.indexOf(',');
        const limit = this.limits.maxDataUriHeader;
        if (comma === -1) {
          if (last) throw badRequest('file is not a valid data URI', 'file');
          if (text.length > limit) throw badRequest('file has a data URI header that is too long', 'file');
          return;
        }
        if (comma + 1 > limit) throw badRequest('file has a data URI header that is too long', 'file');
        // Escaped control characters were refused already: these are raw, which JSON does not allow.
        if (CONTROL.test(text.slice(0, comma))) throw rawControl();
        this.startDecoding(parseDataUriHeader(text.slice(DATA_PREFIX.length, comma)));
        text = text.slice(comma + 1);
      }
      // Escapes read before the decision were not checked against the alphabet.
      if (this.escapedAboveLatin1 && ABOVE_LATIN1.test(text)) throw invalidBase64();
      if (this.state === 'closed') return;
    }
    this.fileText = '';
    try {
      this.decoder!.write(text);
    } catch (error) {
      // Raw control characters are not JSON: that is the error, not the base64 (checked only now, off the fast path).
      if (OTHER_CONTROL.test(text)) throw rawControl();
      throw error;
    }
  }

  private startDecoding(declaredType: string | null): void {
    this.fileMode = 'base64';
    const fileName = this.fields.fileName;
    const accepted = this.events.fileStart({ fieldName: null, fileName: typeof fileName === 'string' ? fileName : null, declaredType });
    this.fileAccepted = accepted;
    this.decoder = new Base64StreamDecoder((bytes) => {
      if (this.fileAccepted && this.state !== 'closed') this.events.fileData(bytes);
    });
  }

  private endFile(): void {
    this.flushFile(true);
    if (this.state === 'closed') return;
    this.decoder!.end();
    this.decoder = null;
    this.state = 'next';
    if (this.fileAccepted) this.events.fileEnd();
  }
}

function rawControl(): Error {
  return badRequest('The JSON body is malformed: a control character in the file string');
}

/** `image/png;name=x` (between `data:` and the comma) must end in `;base64`; returns the media type or null. */
function parseDataUriHeader(header: string): string | null {
  const parts = header.split(';');
  const last = parts.pop()!;
  if (parts.length === 0 || last.trim().toLowerCase() !== 'base64') {
    throw badRequest('file must be a base64 data URI (data:<type>;base64,...)', 'file');
  }
  const type = parts.shift()!.trim().toLowerCase();
  if (type.length > 0 && !MEDIA_TYPE.test(type)) throw badRequest('file has an invalid data URI media type', 'file');
  for (const parameter of parts) {
    if (!PARAMETER.test(parameter.trim())) throw badRequest('file has an invalid data URI parameter', 'file');
  }
  return type.length > 0 ? type : null;
}
