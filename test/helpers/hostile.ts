import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import fc from 'fast-check';
import { chunkedBody } from './raw-connection.ts';

// Raw HTTP over node:net and fast-check generators of hostile request bodies and names, for
// test/integration/hostile-input.test.ts. Raw sockets, because fetch and node:http refuse to send
// much of this (bytes that are not UTF-8 in a header, a body that disagrees with its framing, ...).

export interface RawResponse {
  status: number;
  /** Header lines as received, `Name: value`, in order. */
  headerLines: string[];
  /** Header values by lower-case name (the last one wins). */
  headers: Record<string, string>;
  body: Buffer;
  /** The body parsed as JSON, or undefined. */
  json: any;
}

/**
 * Writes `request` to 127.0.0.1:`port` and reads one HTTP response. Resolves once the response is
 * complete (Content-Length) or the server closed the connection after its headers; rejects when no
 * answer comes within `timeoutMs` (a hang) or the connection closes without one.
 */
export function rawRequest(port: number, request: Buffer, options: { timeoutMs?: number; endAfterWrite?: boolean } = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let done = false;
    const finish = (error: Error | null, response?: RawResponse) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve(response!);
    };
    const timer = setTimeout(() => finish(new Error(`no answer within ${options.timeoutMs ?? 15_000} ms`)), options.timeoutMs ?? 15_000);
    const tryParse = (closed: boolean) => {
      const end = received.indexOf('\r\n\r\n');
      if (end === -1) {
        if (closed) finish(new Error(`connection closed without an answer (${received.length} bytes: ${JSON.stringify(received.subarray(0, 200).toString('latin1'))})`));
        return;
      }
      const lines = received.subarray(0, end).toString('latin1').split('\r\n');
      const statusMatch = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]!);
      if (!statusMatch) {
        finish(new Error(`not an HTTP response: ${JSON.stringify(lines[0])}`));
        return;
      }
      const headerLines = lines.slice(1);
      const headers: Record<string, string> = {};
      for (const line of headerLines) {
        const colon = line.indexOf(':');
        if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      const bodyStart = end + 4;
      if (headers['transfer-encoding']?.toLowerCase() === 'chunked') {
        // An early refusal to a request that asked to close is sent chunked (a lingering close).
        const chunked = chunkedBody(received, bodyStart);
        if (!chunked) {
          if (closed) finish(new Error('connection closed within a chunked answer'));
          return;
        }
        finish(null, { status: Number(statusMatch[1]), headerLines, headers, body: chunked.body, json: jsonOrUndefined(chunked.body) });
        return;
      }
      const length = headers['content-length'] === undefined ? null : Number(headers['content-length']);
      if (length !== null && received.length - bodyStart < length && !closed) return;
      if (length === null && !closed) return;
      const body = received.subarray(bodyStart, length === null ? undefined : bodyStart + length);
      finish(null, { status: Number(statusMatch[1]), headerLines, headers, body, json: jsonOrUndefined(body) });
    };
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      tryParse(false);
    });
    socket.on('close', () => tryParse(true));
    // The server may answer and close before it read everything we send: that is fine.
    socket.on('error', () => undefined);
    socket.on('connect', () => {
      socket.write(request);
      if (options.endAfterWrite) socket.end();
    });
  });
}

function jsonOrUndefined(body: Buffer): any {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** The bytes of one HTTP/1.1 request with Host, Connection: close and a Content-Length matching `body`. */
export function requestBytes(method: string, path: string, headers: Record<string, string>, body?: Buffer): Buffer {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (body !== undefined) lines.push(`Content-Length: ${body.length}`);
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body ?? Buffer.alloc(0)]);
}

// ---------------------------------------------------------------------------------------------
// Multipart bodies

export function part(headers: string | Buffer, content: Buffer | string): Buffer {
  return Buffer.concat([Buffer.isBuffer(headers) ? headers : Buffer.from(headers), Buffer.from('\r\n\r\n'), Buffer.isBuffer(content) ? content : Buffer.from(content)]);
}

/** `--boundary` + each part + `--boundary--`, CRLF-framed. */
export function multipart(boundary: string, parts: Buffer[]): Buffer {
  const chunks: Buffer[] = [];
  for (const each of parts) chunks.push(Buffer.from(`--${boundary}\r\n`), each, Buffer.from('\r\n'));
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}

export function filePart(content: Buffer, fileName = 'f.png', field = 'file'): Buffer {
  return part(`Content-Disposition: form-data; name="${field}"; filename="${fileName}"\r\nContent-Type: image/png`, content);
}

const PNG_HEADER = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');

/** Bytes that sniff as PNG. */
export function png(size: number): Buffer {
  const content = randomBytes(size);
  PNG_HEADER.copy(content, 0, 0, Math.min(size, PNG_HEADER.length));
  return content;
}

/** RFC 5987 `filename*=UTF-8''...`: carries any well-formed string, CR, LF and NUL included. */
export function extFileName(name: string): string {
  return `UTF-8''${encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}

// ---------------------------------------------------------------------------------------------
// Generators

export const boundaryArb = fc.stringMatching(/^[A-Za-z0-9]{8,40}$/);

/** Byte sequences that are not UTF-8: lone continuation bytes, truncated and overlong sequences, surrogates, > U+10FFFF. */
export const invalidUtf8Arb = fc.constantFrom(
  [0x80], [0xbf], [0xc0, 0xaf], [0xc3], [0xc3, 0x28], [0xe2, 0x82], [0xe2, 0x28, 0xa1], [0xed, 0xa0, 0x80],
  [0xf0, 0x28, 0x8c, 0xbc], [0xf4, 0x90, 0x80, 0x80], [0xfe], [0xff], [0xf8, 0x88, 0x80, 0x80, 0x80],
).map((bytes) => Buffer.from(bytes));

const plainUnits = ['a', 'b', 'Z', '0', '7', '.', ' ', '-', '_', 'x'];
const traversalUnits = ['/', '\\', '..', '../', '..\\', './', '%2e%2e%2f', '~', 'C:\\', '//', '\\\\?\\'];
const punctuationUnits = ['"', "'", ';', '=', '<', '>', '&', '%', '*', '(', ')', '`', '$', '{', ',', '#', '?', '+', ':', '|'];
export const controlUnits = ['\u0000', '\r', '\n', '\r\n', '\t', '\u0007', '\u001b', '\u007f', '\u0085', '\u009b'];
/** Bidirectional controls and invisible characters: the overrides and isolates are refused, the marks are not. */
const bidiUnits = ['\u200e', '\u200f', '\u061c', '\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069', '\u200b', '\ufeff'];
const unicodeUnits = ['é', '日本', '😀', 'ß', 'Ω', 'e\u0301', '\uff0e', '\u2215', '\u2044', '\ufffd', '\u00a0', '\u2028'];
const surrogateUnits = ['\ud800', '\udbff', '\udc00', '\udfff'];

function nameUnits(withSurrogates: boolean) {
  return fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(...plainUnits) },
    { weight: 3, arbitrary: fc.constantFrom(...traversalUnits) },
    { weight: 3, arbitrary: fc.constantFrom(...punctuationUnits) },
    { weight: 1, arbitrary: fc.constantFrom(...controlUnits) },
    { weight: 2, arbitrary: fc.constantFrom(...bidiUnits) },
    { weight: 2, arbitrary: fc.constantFrom(...unicodeUnits) },
    { weight: withSurrogates ? 1 : 0, arbitrary: fc.constantFrom(...surrogateUnits) },
  );
}

const knownHostileNames = [
  '../../../etc/passwd', '..\\..\\..\\windows\\win.ini', '/etc/shadow', 'C:\\boot.ini', '....//....//x.png', '..', '.', '', ' ',
  'a/..', 'x.png\u0000.exe', 'report\u202egnp.exe', 'evil\r\nX-Injected: 1\r\n.png', 'name"; filename="evil.png', 'a\\"b.png',
  '%0d%0aSet-Cookie: a=b.png', 'CON', 'nul.png', 'x.png::$DATA', ' spaced .png ', '\u200fmark.png', 'zero\u200bwidth.png',
];

/**
 * File names a client might send: path traversal, control characters, NUL, bidirectional
 * controls, quotes and header syntax, odd but valid Unicode, and lengths up to 10,000 characters.
 * Most end in `.png`, so only the name rules decide (not the blocked-extension list).
 */
export function fileNameArb(options: { surrogates: boolean }) {
  return fc.oneof(
    { weight: 10, arbitrary: fc.string({ unit: nameUnits(options.surrogates), maxLength: 30 }).map((name) => `${name}.png`) },
    { weight: 2, arbitrary: fc.constantFrom(...knownHostileNames) },
    { weight: 1, arbitrary: fc.integer({ min: 240, max: 10_000 }).map((length) => `${'n'.repeat(length)}.png`) },
    { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 1, max: 300 }), fc.constantFrom('日', '😀')).map(([count, unit]) => `${unit.repeat(count)}.png`) },
    // Characters outside the BMP around the 200th UTF-16 unit, where a served name's header copy is cut.
    { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 190, max: 210 }), fc.integer({ min: 1, max: 20 })).map(([ascii, emoji]) => `${'a'.repeat(ascii)}${'😀'.repeat(emoji)}.png`) },
  );
}

/** Folder paths: traversal, empty segments, controls, deep and long ones, and ordinary Unicode names. */
export function folderArb(options: { surrogates: boolean }) {
  const segment = fc.oneof(
    { weight: 8, arbitrary: fc.string({ unit: nameUnits(options.surrogates), minLength: 1, maxLength: 12 }) },
    { weight: 1, arbitrary: fc.constantFrom('..', '.', '', ' ', 'n'.repeat(101), 'ok') },
  );
  return fc.array(segment, { minLength: 1, maxLength: 7 }).map((segments) => segments.join('/'));
}

// ---------------------------------------------------------------------------------------------
// The rules a name must meet (docs/api.md, "Upload rules"): the last path segment, trimmed, 1-255 characters,
// not `.` or `..`, no C0/C1 control, no bidirectional override/embedding/isolate, no unpaired surrogate.

const REFUSED_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
const UNPAIRED = /\p{Cs}/u;

/** The name the service stores for `name`, or null when it must refuse it (400). */
export function expectedFileName(name: string): string | null {
  const segment = name.split(/[\\/]/).pop()!.trim();
  if (segment === '' || segment === '.' || segment === '..' || segment.length > 255) return null;
  if (REFUSED_CHARACTERS.test(segment) || UNPAIRED.test(segment)) return null;
  return segment;
}

/** The folder segments stored for `path`, or null when it must be refused (400). */
export function expectedFolder(path: string): string[] | null {
  const segments = path.replace(/^\/+|\/+$/g, '').split('/').map((segment) => segment.trim());
  if (segments.length > 5) return null;
  for (const segment of segments) {
    if (segment === '' || segment === '.' || segment === '..' || segment.length > 100) return null;
    if (REFUSED_CHARACTERS.test(segment) || UNPAIRED.test(segment)) return null;
  }
  return segments;
}
