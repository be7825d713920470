/**
 * A header value with parameters, as in Content-Type and Content-Disposition:
 *
 *   form-data; name="file"; filename="a b.png"; filename*=UTF-8''%E2%82%AC.png
 *
 * `value` is the part before the first `;`, trimmed. Parameter names are lower-cased; a name
 * given twice keeps its first value. Values are tokens (trimmed) or quoted strings, in which
 * `\"` and `\\` stand for `"` and `\` and any other backslash is kept as is (browsers do not
 * escape backslashes in file names). An extended parameter (`name*=charset'lang'pct-encoded`,
 * RFC 8187 / 5987) is decoded from UTF-8 or ISO-8859-1 and stored under its own name with the
 * star (`filename*`); an unknown charset or a malformed one leaves it out.
 *
 * `text` is the header as a Latin-1 string (one character per byte, how header bytes arrive);
 * values with bytes above 0x7F are decoded as UTF-8, invalid sequences becoming U+FFFD.
 */
export interface HeaderParams {
  value: string;
  params: Map<string, string>;
}

// ignoreBOM: a leading U+FEFF is part of the name, not a byte order mark to drop.
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

export function parseHeaderParams(text: string): HeaderParams {
  const params = new Map<string, string>();
  let end = text.indexOf(';');
  if (end === -1) end = text.length;
  const value = text.slice(0, end).trim();
  let pos = end + 1;
  while (pos < text.length) {
    const equals = text.indexOf('=', pos);
    const semicolon = text.indexOf(';', pos);
    if (equals === -1 || (semicolon !== -1 && semicolon < equals)) {
      // A parameter without a value: skipped.
      if (semicolon === -1) break;
      pos = semicolon + 1;
      continue;
    }
    const name = text.slice(pos, equals).trim().toLowerCase();
    pos = skipSpace(text, equals + 1);
    let raw: string;
    if (text.charCodeAt(pos) === QUOTE) {
      const quoted = readQuoted(text, pos + 1);
      raw = quoted.value;
      pos = quoted.end;
      // Whatever follows the closing quote up to the next `;` is ignored.
      const next = text.indexOf(';', pos);
      pos = next === -1 ? text.length : next + 1;
    } else {
      const next = text.indexOf(';', pos);
      const stop = next === -1 ? text.length : next;
      raw = text.slice(pos, stop).trim();
      pos = stop + 1;
    }
    if (name.length === 0 || params.has(name)) continue;
    const decoded = name.endsWith('*') ? decodeExtended(raw) : decodeUtf8(raw);
    if (decoded !== null) params.set(name, decoded);
  }
  return { value, params };
}

function skipSpace(text: string, pos: number): number {
  while (pos < text.length && (text.charCodeAt(pos) === 0x20 || text.charCodeAt(pos) === 0x09)) pos++;
  return pos;
}

/** A quoted string's content from just after its opening quote; an unclosed one runs to the end. */
function readQuoted(text: string, start: number): { value: string; end: number } {
  let out = '';
  let from = start;
  for (let pos = start; pos < text.length; pos++) {
    const code = text.charCodeAt(pos);
    if (code === QUOTE) return { value: out + text.slice(from, pos), end: pos + 1 };
    if (code === BACKSLASH && pos + 1 < text.length) {
      const next = text.charCodeAt(pos + 1);
      if (next === QUOTE || next === BACKSLASH) {
        out += text.slice(from, pos);
        from = pos + 1;
        pos++;
      }
    }
  }
  return { value: out + text.slice(from), end: text.length };
}

/** A Latin-1 string of UTF-8 bytes, decoded; ASCII passes as is. */
function decodeUtf8(latin1: string): string {
  for (let i = 0; i < latin1.length; i++) {
    if (latin1.charCodeAt(i) > 0x7f) return utf8.decode(Buffer.from(latin1, 'latin1'));
  }
  return latin1;
}

/** `charset'language'percent-encoded` (RFC 8187); null when malformed or of an unknown charset. */
function decodeExtended(raw: string): string | null {
  const first = raw.indexOf("'");
  const second = first === -1 ? -1 : raw.indexOf("'", first + 1);
  if (second === -1) return null;
  const charset = raw.slice(0, first).toLowerCase();
  const encoded = raw.slice(second + 1);
  if (!/^(?:[\x21-\x24\x26-\x7e]|%[0-9a-fA-F]{2})*$/.test(encoded)) return null;
  const bytes = Buffer.from(encoded.replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1');
  if (charset === 'utf-8') return utf8.decode(bytes);
  if (charset === 'iso-8859-1') return bytes.toString('latin1');
  return null;
}
