import { createRequire } from 'node:module';
import { ParseError } from './parse-error.ts';

/**
 * A synchronous push parser for JSON upload bodies, built on stream-json's tokenizer:
 *
 *   {"file": "<data URI or base64>", "fileName": "...", "public": true, "folder": "...", "tags": [...]}
 *
 * in any key order. The `file` string is never held: its characters are validated and base64-decoded
 * as they arrive and the bytes are handed to fileData(). Every other top-level member is parsed into
 * a plain value (bounded in size and depth) and reported by finish(); their types are the caller's
 * to validate.
 *
 * Contract (the caller must know all of this):
 *
 * - Synchronous: everything a chunk yields is delivered before write() returns; finish() or error()
 *   is delivered before end() returns. Order: fileStart, fileData*, fileEnd, finish.
 * - Memory: between calls the parser holds a few characters (stream-json's undecided remainder, at
 *   most 3 base64 characters, or a data URI header of at most 256) plus the other members (at most
 *   256 KiB); within write() the file text is decoded in blocks of at most 64 Ki characters.
 * - Backpressure: there is nothing inside the parser to pause. fileData may return false ("my storage
 *   is behind"); write() then returns false, meaning "pause the socket". Resume the socket when your
 *   storage drains and call write() again; there is no resume() on the parser, and a chunk written
 *   while you are behind is still delivered in full.
 * - fileData chunks are fresh Buffers owned by the consumer; the parser never reuses or retains them.
 * - Errors go to error(), exactly once, and nothing is called after it: a ParseError for a malformed
 *   body (its message is fit for a 400 response), or whatever one of your callbacks threw (caught,
 *   the parser destroyed, and passed on as is). write()/end() never throw; writes after end(),
 *   error() or destroy() are ignored and return false.
 * - "No file": a well-formed object without a `file` member ends in finish() with `hasFile: false`
 *   (the caller answers 400 / MissingArgument); fileStart is then never called.
 * - fileStart(info) may return false to skip the file: it is still validated, but no fileData or
 *   fileEnd follows.
 * - Other members: a key given twice keeps its last value (as JSON.parse does); `file` given twice is
 *   an error. Strings are UTF-8; invalid UTF-8 becomes U+FFFD.
 */

export interface JsonFileInfo {
  /** The `file` string is a data URI (`data:<type>;base64,...`) rather than bare base64. */
  dataUri: boolean;
  /** The data URI's media type, lower-cased, without parameters; null for bare base64 or `data:;base64,`. */
  declaredType: string | null;
}

export interface JsonUploadSummary {
  /** The body had a `file` member. */
  hasFile: boolean;
}

export interface JsonUploadEvents {
  /** The `file` string begins (reported once its data URI header, if any, is complete). Return false to skip it. */
  fileStart(info: JsonFileInfo): boolean | void;
  /** The next decoded bytes of the file; return false when your storage is behind (write() then returns false). */
  fileData(chunk: Buffer): boolean | void;
  /** The `file` string ended and was valid base64. */
  fileEnd(): void;
  /** The body is a complete, valid object. `fields` holds every top-level member except `file`. */
  finish(fields: Record<string, unknown>, summary: JsonUploadSummary): void;
  /** The body is rejected (ParseError) or one of the callbacks threw (that error as is). Called once; nothing follows. */
  error(error: unknown): void;
}

export interface JsonUploadLimits {
  /** UTF-8 bytes of one top-level member other than `file` (its key, strings, numbers, plus one per token). */
  maxFieldBytes: number;
  /** The same, for all members other than `file` together. */
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

// ---------------------------------------------------------------------------------------------
// Base64

const NON_ALPHABET = /[^A-Za-z0-9+/]/;
const WHITESPACE_ALL = /[\r\n ]+/g;
const ONLY_PADDING = /^=+$/;
const EQUALS = 0x3d;

function invalidBase64(): ParseError {
  return new ParseError('file is not valid base64');
}

/**
 * Decodes `block` (a multiple of 4 characters) if it is all standard-alphabet characters; null otherwise.
 * Validation without a per-character loop (which runs at under 200 MB/s): Node's decoder skips (or
 * stops at) every character outside its alphabet, so the output is exactly 3/4 of the input length
 * only when every character was decoded. Its alphabet also takes the URL-safe '-' and '_', and it
 * reads only the low byte of a character above U+00FF, so those are ruled out separately.
 */
function decodePlain(block: string): Buffer | null {
  const bytes = Buffer.from(block, 'base64');
  if (bytes.length * 4 !== block.length * 3) return null;
  if (block.indexOf('-') !== -1 || block.indexOf('_') !== -1 || Buffer.byteLength(block, 'utf8') !== block.length) return null;
  return bytes;
}

/**
 * Decodes a base64 text given in pieces of any size, strictly: the standard alphabet, `=` padding
 * only to complete the very last quantum, CR, LF and space ignored anywhere, anything else
 * rejected, and the text (without whitespace) must be whole 4-character quanta. At most 3
 * characters are held between pieces. write()/end() throw ParseError('file is not valid base64').
 */
export class Base64StreamDecoder {
  private readonly onBytes: (bytes: Buffer) => void;
  /** Characters after the last whole quantum, not yet validated (at most 3). */
  private carry = '';
  /** The final, padded quantum has been seen: only whitespace (or the rest of its '=') may follow. */
  private padded = false;

  constructor(onBytes: (bytes: Buffer) => void) {
    this.onBytes = onBytes;
  }

  write(text: string): void {
    if (text.length === 0) return;
    if (this.padded) {
      this.afterPadding(text);
      return;
    }
    let s = this.carry.length > 0 ? this.carry + text : text;
    // indexOf runs at memory speed; the replace only when there is whitespace (MIME line breaks).
    if (s.indexOf('\n') !== -1 || s.indexOf('\r') !== -1 || s.indexOf(' ') !== -1) s = s.replace(WHITESPACE_ALL, '');
    if (!this.decodeWhole(s)) this.decodePadded(s);
  }

  end(): void {
    if (this.carry.replace(WHITESPACE_ALL, '').length !== 0) throw invalidBase64();
    this.carry = '';
  }

  /** Decodes the whole quanta of `s` if they are plain alphabet characters, keeping the rest as carry. */
  private decodeWhole(s: string): boolean {
    const whole = s.length - (s.length % 4);
    if (whole === 0) {
      this.carry = s;
      return true;
    }
    const bytes = decodePlain(whole === s.length ? s : s.slice(0, whole));
    if (bytes === null) return false;
    this.carry = s.slice(whole);
    this.onBytes(bytes);
    return true;
  }

  /** `s` has no whitespace and is not plain alphabet: valid only as data ending in the padded final quantum. */
  private decodePadded(s: string): void {
    const bad = s.search(NON_ALPHABET);
    if (bad === -1 || s.charCodeAt(bad) !== EQUALS || !ONLY_PADDING.test(s.slice(bad))) throw invalidBase64();
    const quantumStart = bad - (bad % 4);
    // A final quantum holds 2 or 3 data characters before its padding.
    if (bad - quantumStart < 2) throw invalidBase64();
    if (quantumStart > 0) {
      const bytes = decodePlain(s.slice(0, quantumStart));
      if (bytes === null) throw invalidBase64();
      this.onBytes(bytes);
    }
    this.padded = true;
    this.takeFinalQuantum(s.slice(quantumStart));
  }

  private afterPadding(text: string): void {
    const s = text.replace(WHITESPACE_ALL, '');
    if (s.length === 0) return;
    // Only the '=' that completes a split final quantum ("xx=" + "=") may follow.
    if (this.carry.length === 0 || !ONLY_PADDING.test(s)) throw invalidBase64();
    this.takeFinalQuantum(this.carry + s);
  }

  /** `quantum` is 2-3 alphabet characters then '='s; decodes it once it is 4 characters long. */
  private takeFinalQuantum(quantum: string): void {
    if (quantum.length > 4) throw invalidBase64();
    if (quantum.length < 4) {
      this.carry = quantum;
      return;
    }
    this.carry = '';
    const bytes = Buffer.from(quantum, 'base64');
    if (bytes.length !== (quantum.endsWith('==') ? 1 : 2)) throw invalidBase64();
    this.onBytes(bytes);
  }
}

// ---------------------------------------------------------------------------------------------
// stream-json, driven directly

interface Token {
  name: string;
  value?: string | boolean | null;
}

type Callback = (error?: Error | null) => void;

/** The parts of stream-json's Parser (a Transform) we drive: its push() is replaced to receive tokens synchronously. */
interface TokenParser {
  /** Input text not consumed yet (stream-json waits for more before deciding on it). */
  _buffer: string;
  push(token: Token | null): boolean;
  _transform(chunk: Buffer, encoding: string, callback: Callback): void;
  _flush(callback: Callback): void;
  destroy(): void;
}

const require = createRequire(import.meta.url);
const StreamJsonParser = require('stream-json/Parser.js') as new (options: Record<string, boolean>) => TokenParser;

const STRING_BLOCK = 64 * 1024;
/** Beginnings of tokens stream-json waits on: true/false/null cut short, or an escape sequence cut short. */
const TOKEN_START = /^(?:t(?:r(?:ue?)?)?|f(?:a(?:l(?:se?)?)?)?|n(?:u(?:ll?)?)?|\\(?:u[0-9a-fA-F]{0,3})?)$/;
const DATA_PREFIX = 'data:';
const MEDIA_TYPE = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/;
const PARAMETER = /^[a-z0-9!#$&^_.+-]+=[^;,]*$/i;

type Mode =
  | 'start' // before the top-level object
  | 'member' // in the top-level object, between members
  | 'fileValue' // after "file": expecting its string
  | 'file' // inside the file string
  | 'field' // inside another member's value
  | 'done'; // the top-level object has closed

type FileMode = 'prefix' | 'dataUriHeader' | 'base64';

interface Frame {
  container: Record<string, unknown> | unknown[];
  key: string;
}

function defineMember(target: Record<string, unknown>, key: string, value: unknown): void {
  // Like JSON.parse: a key named __proto__ is an ordinary own property.
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

export class JsonUploadParser {
  private readonly events: JsonUploadEvents;
  private readonly limits: JsonUploadLimits;
  private readonly tokens: TokenParser;
  private state: 'open' | 'done' | 'failed' = 'open';
  private pendingError: { error: unknown } | null = null;
  private behind = false;

  private mode: Mode = 'start';
  private readonly fields: Record<string, unknown> = {};
  private hasFile = false;
  private inKey = false;
  private memberKey = '';

  // The member value being built.
  private fieldBytes = 0;
  private totalBytes = 0;
  private readonly stack: Frame[] = [];
  private stringParts: string[] | null = null;

  // The file string.
  private fileMode: FileMode = 'prefix';
  private fileText = '';
  private fileAccepted = false;
  private decoder: Base64StreamDecoder | null = null;

  constructor(events: JsonUploadEvents, limits: Partial<JsonUploadLimits> = {}) {
    this.events = events;
    this.limits = { ...DEFAULT_JSON_UPLOAD_LIMITS, ...limits };
    // Keys and numbers are streamed as well as packed so that their size can be bounded while they arrive.
    this.tokens = new StreamJsonParser({
      packKeys: true,
      streamKeys: true,
      packStrings: false,
      streamStrings: true,
      packNumbers: true,
      streamNumbers: true,
    });
    this.tokens.push = (token) => {
      if (token !== null && this.state === 'open') this.onToken(token);
      return true;
    };
  }

  /** Parses one chunk and delivers its events before returning. Returns false when fileData asked for a pause. */
  write(chunk: Buffer): boolean {
    if (this.state !== 'open') return false;
    this.behind = false;
    this.run(() => {
      this.tokens._transform(chunk, 'buffer', (error) => {
        if (!error) return;
        throw this.mode === 'done' ? new ParseError('The JSON body has data after its object', { cause: error }) : malformed(error);
      });
      if (this.state === 'open' && this.mode === 'file') this.flushFileText();
    });
    return this.state === 'open' && !this.behind;
  }

  /** The body is complete: finish() or error() is called before this returns. */
  end(): void {
    if (this.state !== 'open') return;
    this.run(() => {
      // What stream-json held back undecided: a valid beginning of a token means the body stopped short.
      const undecided = this.tokens._buffer.trim();
      const flushed: { error: Error | null } = { error: null };
      this.tokens._flush((error) => {
        flushed.error = error ?? null;
      });
      if (this.state !== 'open') return;
      if (this.mode === 'start') throw new ParseError('The request body must be a JSON object');
      if (flushed.error && undecided !== '' && !TOKEN_START.test(undecided)) throw malformed(flushed.error);
      if (flushed.error || this.mode !== 'done') throw new ParseError('The JSON body is truncated', { cause: flushed.error ?? undefined });
    });
    if (this.state !== 'open') return;
    this.state = 'done';
    this.tokens.destroy();
    try {
      this.events.finish(this.fields, { hasFile: this.hasFile });
    } catch (error) {
      this.events.error(error);
    }
  }

  /** Stops parsing; no callback is called afterwards. Safe to call from a callback. */
  destroy(): void {
    if (this.state !== 'open') return;
    this.state = 'failed';
    this.tokens.destroy();
  }

  /** Runs parsing work; a throw (ours or a callback's) fails the parser and is reported once the stack has unwound. */
  private run(work: () => void): void {
    try {
      work();
    } catch (error) {
      if (this.state === 'open') {
        this.state = 'failed';
        this.tokens.destroy();
        this.pendingError = { error };
      }
    }
    const pending = this.pendingError;
    if (pending) {
      this.pendingError = null;
      this.events.error(pending.error);
    }
  }

  private onToken(token: Token): void {
    switch (this.mode) {
      case 'start':
        if (token.name !== 'startObject') throw new ParseError('The request body must be a JSON object');
        this.mode = 'member';
        return;
      case 'member':
        this.onMemberToken(token);
        return;
      case 'fileValue':
        if (token.name !== 'startString') throw new ParseError('file must be a string');
        this.mode = 'file';
        this.fileMode = 'prefix';
        this.fileText = '';
        return;
      case 'file':
        if (token.name === 'stringChunk') {
          this.fileText += token.value as string;
          if (this.fileText.length >= STRING_BLOCK) this.flushFileText();
        } else if (token.name === 'endString') {
          this.endFile();
          this.mode = 'member';
        }
        return;
      case 'field':
        this.onFieldToken(token);
        return;
      case 'done':
        // stream-json itself rejects anything but whitespace after the top-level value.
        throw new ParseError('The JSON body has data after its object');
    }
  }

  private onMemberToken(token: Token): void {
    switch (token.name) {
      case 'startKey':
        this.inKey = true;
        this.fieldBytes = 0;
        return;
      case 'stringChunk':
        this.count(token.value as string, 'key');
        return;
      case 'endKey':
        this.inKey = false;
        return;
      case 'keyValue': {
        const key = token.value as string;
        if (key === 'file') {
          if (this.hasFile) throw new ParseError('The JSON body has more than one "file" member');
          this.hasFile = true;
          this.mode = 'fileValue';
          return;
        }
        this.memberKey = key;
        this.mode = 'field';
        return;
      }
      case 'endObject':
        this.mode = 'done';
        return;
      default:
        throw new ParseError('The JSON body is malformed');
    }
  }

  private onFieldToken(token: Token): void {
    this.countToken();
    switch (token.name) {
      case 'startObject':
      case 'startArray':
        if (this.stack.length >= this.limits.maxFieldDepth) {
          throw new ParseError(`"${this.label()}" nests deeper than ${this.limits.maxFieldDepth} levels`);
        }
        this.stack.push({ container: token.name === 'startObject' ? {} : [], key: '' });
        return;
      case 'endObject':
      case 'endArray':
        this.complete(this.stack.pop()!.container);
        return;
      case 'startKey':
        this.inKey = true;
        return;
      case 'endKey':
        this.inKey = false;
        return;
      case 'keyValue':
        this.stack[this.stack.length - 1]!.key = token.value as string;
        return;
      case 'startString':
        this.stringParts = [];
        return;
      case 'stringChunk': {
        const text = token.value as string;
        this.count(text, this.inKey ? 'key' : 'value');
        if (!this.inKey) this.stringParts!.push(text);
        return;
      }
      case 'endString': {
        const value = this.stringParts!.join('');
        this.stringParts = null;
        this.complete(value);
        return;
      }
      case 'numberChunk':
        this.count(token.value as string, 'value');
        return;
      case 'numberValue':
        this.complete(Number(token.value));
        return;
      case 'trueValue':
      case 'falseValue':
      case 'nullValue':
        this.complete(token.value);
        return;
      default:
        // startNumber, endNumber
        return;
    }
  }

  /** A value is complete: attach it to its container, or it is the member's whole value. */
  private complete(value: unknown): void {
    const parent = this.stack[this.stack.length - 1];
    if (parent === undefined) {
      defineMember(this.fields, this.memberKey, value);
      this.mode = 'member';
    } else if (Array.isArray(parent.container)) {
      parent.container.push(value);
    } else {
      defineMember(parent.container, parent.key, value);
    }
  }

  private count(text: string, what: 'key' | 'value'): void {
    const bytes = Buffer.byteLength(text);
    this.fieldBytes += bytes;
    this.totalBytes += bytes;
    this.checkSize(what);
  }

  private countToken(): void {
    this.fieldBytes += 1;
    this.totalBytes += 1;
    this.checkSize('value');
  }

  private checkSize(what: 'key' | 'value'): void {
    if (this.totalBytes > this.limits.maxTotalFieldBytes) {
      throw new ParseError(`The JSON members other than "file" are larger than ${this.limits.maxTotalFieldBytes} bytes in total`);
    }
    if (this.fieldBytes > this.limits.maxFieldBytes) {
      throw new ParseError(
        this.mode === 'member' && what === 'key'
          ? `A JSON key is longer than ${this.limits.maxFieldBytes} bytes`
          : `"${this.label()}" is larger than ${this.limits.maxFieldBytes} bytes`,
      );
    }
  }

  private label(): string {
    return this.memberKey.length > 100 ? `${this.memberKey.slice(0, 100)}...` : this.memberKey;
  }

  // ---- the file string

  private flushFileText(): void {
    const text = this.fileText;
    if (text.length === 0) return;
    this.fileText = '';
    this.fileChars(text, false);
  }

  private endFile(): void {
    const text = this.fileText;
    this.fileText = '';
    this.fileChars(text, true);
    this.decoder!.end();
    if (this.fileAccepted) this.events.fileEnd();
  }

  private fileChars(text: string, last: boolean): void {
    if (this.fileMode === 'base64') {
      this.decoder!.write(text);
      return;
    }
    // Until we know whether this is a data URI, the text waits here (at most maxDataUriHeader characters).
    this.fileText = text;
    if (this.fileMode === 'prefix') {
      if (text.length < DATA_PREFIX.length && !last) return;
      if (text.slice(0, DATA_PREFIX.length).toLowerCase() !== DATA_PREFIX) {
        this.fileText = '';
        this.startFile(false, null, text);
        return;
      }
      this.fileMode = 'dataUriHeader';
    }
    const comma = text.indexOf(',');
    if (comma === -1) {
      if (text.length > this.limits.maxDataUriHeader || last) {
        throw new ParseError(last ? 'file is not a valid data URI' : 'file has a data URI header that is too long');
      }
      return;
    }
    if (comma + 1 > this.limits.maxDataUriHeader) throw new ParseError('file has a data URI header that is too long');
    this.fileText = '';
    this.startFile(true, parseDataUriHeader(text.slice(DATA_PREFIX.length, comma)), text.slice(comma + 1));
  }

  private startFile(dataUri: boolean, declaredType: string | null, rest: string): void {
    this.fileMode = 'base64';
    const started = this.events.fileStart({ dataUri, declaredType });
    this.fileAccepted = started !== false && this.state === 'open';
    this.decoder = new Base64StreamDecoder((bytes) => {
      if (this.fileAccepted && this.state === 'open' && this.events.fileData(bytes) === false) this.behind = true;
    });
    if (rest.length > 0) this.decoder.write(rest);
  }
}

/** `image/png;name=x` (between `data:` and the comma) must end in `;base64`; returns the media type or null. */
function parseDataUriHeader(header: string): string | null {
  const parts = header.split(';');
  const last = parts.pop()!;
  if (parts.length === 0 || last.trim().toLowerCase() !== 'base64') {
    throw new ParseError('file must be a base64 data URI (data:<type>;base64,...)');
  }
  const type = parts.shift()!.trim().toLowerCase();
  if (type.length > 0 && !MEDIA_TYPE.test(type)) throw new ParseError('file has an invalid data URI media type');
  for (const parameter of parts) {
    if (!PARAMETER.test(parameter.trim())) throw new ParseError('file has an invalid data URI parameter');
  }
  return type.length > 0 ? type : null;
}

function malformed(error: Error): ParseError {
  const detail = error.message.replace(/^Parser (cannot parse input: |has )/, '');
  return new ParseError(`The JSON body is malformed: ${detail}`, { cause: error });
}
