/**
 * Content sniffing: the type of a file from its first bytes, and whether they are blocked. Pure
 * module: no pool, no I/O. The policy it serves, and the checks of file names and declared types
 * (checkNameAndType, resolveContentType), are in src/domain/file-types.ts.
 *
 * sniffContent() in detail (on at most the first MAX_SNIFF_BYTES bytes):
 *
 *   Blocked, by reason:
 *   - 'executable': ELF (7F 'ELF'); Mach-O (FEEDFACE, FEEDFACF, CEFAEDFE, CFFAEDFE) and
 *     Mach-O universal binaries (CAFEBABE, CAFEBABF). Java class files also start with
 *     CAFEBABE and are blocked too, as executable code; there is no reason to host either.
 *     PE / DOS executables ('MZ') unless the head is plain text (a real MZ header holds
 *     binary fields within its first bytes, so a text that happens to start with "MZ" passes).
 *   - 'shell script': any '#!' shebang at the very start (after an optional UTF-8 BOM),
 *     whatever the interpreter (sh, bash, python, node, ...).
 *   - 'html': after an optional BOM (UTF-8, UTF-16 LE/BE) and whitespace, one of the WHATWG
 *     MIME sniffing HTML patterns, case-insensitive, followed by a tag-terminating byte
 *     (WHATWG: space or '>'; here also any whitespace, '/', or the end of the head):
 *     <!DOCTYPE HTML, <HTML, <HEAD, <SCRIPT, <IFRAME, <H1, <DIV, <FONT, <TABLE, <A, <STYLE,
 *     <TITLE, <B, <BODY, <BR, <P. Beyond WHATWG, in a markup document (one whose first
 *     non-blank character is '<'), leading comments ('<!-- ... -->'), '<?...?>' processing
 *     instructions (the XML declaration) and '<!DOCTYPE ...>' are skipped and the first element
 *     is checked against the same list (an HTML or XHTML doctype blocks by itself); and anywhere
 *     in the head of a markup document, '<html', '<script', '<iframe' or the XHTML namespace
 *     URI block (so '<!--' followed later by '<html' or '<script' blocks, even when the comment
 *     is not closed within the head). Deviation from WHATWG: '<!--' alone does not block, so
 *     XML files with a leading comment pass; and '<head'/'<body' below another root element
 *     (OPML) do not block either.
 *   - 'svg': a markup document whose first element or doctype is svg (also with a namespace
 *     prefix, e.g. <s:svg>), or that has '<svg' or the SVG namespace URI anywhere in the head,
 *     also after '<?xml ...?>', comments and doctype.
 *     Text that does not start with markup (a log mentioning "<svg>" or "<script>") is not
 *     markup: browsers never render it as such, so it is not blocked.
 *   - 'javascript': conservative. After an optional BOM, whitespace and leading JavaScript
 *     comments (// and /* *\/), the text must START with one of these (case-sensitive):
 *       'use strict' / "use strict";
 *       import x from '…' / import x, {… / import {… / import * as … / import '…' / import('…';
 *       export default|const|let|var|function|class|async … / export { / export *;
 *       [async] function [*][name](…) {   (with the opening brace);
 *       (function…( / ;(function…( / !function…( / (async function / (() => / (async x =>;
 *       var|let|const <name, {…} or […]> then = ; or , ;   class Name [extends X] {;
 *       window|document|globalThis|self.a.b then '(' or '[' directly, or '=' (not '==');
 *       module.exports;  exports.x =;  require('…';  define([ / define(function / define('….
 *     Only the start counts, so words like "function", "import" or "const" inside ordinary
 *     text or logs never block, and prose starting with such a word ("import the data…",
 *     "let me know, …", "document.pdf (copy)") lacks the required punctuation. Script without
 *     such a start is not caught by content (names and declared types still are).
 *     Only the start counts, so words like "function", "import" or "const" inside ordinary
 * *
 *   Labelled, not blocked (magic bytes at the start): PNG, JPEG, GIF, WebP, BMP (with a sane
 *   header), ICO, TIFF, ISO-BMFF 'ftyp' files by brand (AVIF, HEIC/HEIF, MP4, M4A, MOV, 3GP),
 *   EBML (WebM by DocType, else Matroska), AVI, WAV, MP3 (ID3 tag or a valid MPEG audio frame
 *   header), OGG, FLAC, PDF, ZIP (also docx/xlsx/jar/apk — all stored as application/zip; the
 *   content alone does not tell them apart), GZIP, 7z, RAR.
 *   Then text: valid UTF-8 (a sequence cut off by the end of the head is allowed) with no
 *   control characters other than \t \n \r \f (so no NUL, ESC, DEL or C1 controls):
 *   'application/json' when, after whitespace, it starts with '{' or '[' and the head is a
 *   valid prefix of one JSON value (so "[INFO] ..." logs and JSON Lines stay text), else
 *   'text/plain; charset=utf-8'.
 *   Anything else (including empty content and UTF-16 text): contentType null.
 *   A blocked result always has contentType null. Text with a UTF-16 BOM is checked for
 *   markup and script like UTF-8 text, and never matched against binary signatures (FF FE
 *   would otherwise pass for an MPEG audio frame).
 */

import { isAscii } from 'node:buffer';
import { TEXT_PLAIN } from '../../domain/file-types.ts';

/** Bytes of the content's start that sniffContent() looks at; more are ignored. */
export const MAX_SNIFF_BYTES = 4096;

export interface SniffResult {
  /** Detected type, or null when unknown (and always null when blocked). */
  contentType: string | null;
  /** Why the content is refused ('html', 'javascript', 'executable', 'shell script', 'svg'), or null. */
  blocked: string | null;
}

function result(contentType: string | null, blocked: string | null = null): SniffResult {
  return { contentType: blocked ? null : contentType, blocked };
}

function startsWith(bytes: Uint8Array, signature: readonly number[], at = 0): boolean {
  if (bytes.length < at + signature.length) return false;
  for (let index = 0; index < signature.length; index++) {
    if (bytes[at + index] !== signature[index]) return false;
  }
  return true;
}

function ascii(text: string): number[] {
  return Array.from(text, (char) => char.charCodeAt(0));
}

function latin1(bytes: Uint8Array, start = 0, end = bytes.length): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset + start, Math.max(0, Math.min(end, bytes.length) - start)).toString('latin1');
}

// ---------------------------------------------------------------------------------------
// Binary signatures

const EXECUTABLE_SIGNATURES: readonly (readonly number[])[] = [
  [0x7f, 0x45, 0x4c, 0x46], // ELF
  [0xfe, 0xed, 0xfa, 0xce], // Mach-O 32-bit, big-endian
  [0xfe, 0xed, 0xfa, 0xcf], // Mach-O 64-bit, big-endian
  [0xce, 0xfa, 0xed, 0xfe], // Mach-O 32-bit, little-endian
  [0xcf, 0xfa, 0xed, 0xfe], // Mach-O 64-bit, little-endian
  [0xca, 0xfe, 0xba, 0xbe], // Mach-O universal binary; also Java class files
  [0xca, 0xfe, 0xba, 0xbf], // Mach-O universal binary, 64-bit
];

const SIMPLE_LABELS: readonly { signature: readonly number[]; at?: number; type: string }[] = [
  { signature: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], type: 'image/png' },
  { signature: [0xff, 0xd8, 0xff], type: 'image/jpeg' },
  { signature: ascii('GIF87a'), type: 'image/gif' },
  { signature: ascii('GIF89a'), type: 'image/gif' },
  { signature: [0x49, 0x49, 0x2a, 0x00], type: 'image/tiff' },
  { signature: [0x4d, 0x4d, 0x00, 0x2a], type: 'image/tiff' },
  { signature: ascii('OggS\0'), type: 'audio/ogg' },
  { signature: ascii('fLaC'), type: 'audio/flac' },
  { signature: ascii('%PDF-'), type: 'application/pdf' },
  { signature: [0x50, 0x4b, 0x03, 0x04], type: 'application/zip' },
  { signature: [0x50, 0x4b, 0x05, 0x06], type: 'application/zip' }, // empty archive
  { signature: [0x50, 0x4b, 0x07, 0x08], type: 'application/zip' }, // spanned archive
  { signature: [0x1f, 0x8b, 0x08], type: 'application/gzip' },
  { signature: [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c], type: 'application/x-7z-compressed' },
  { signature: ascii('Rar!\x1a\x07\x00'), type: 'application/vnd.rar' },
  { signature: ascii('Rar!\x1a\x07\x01\x00'), type: 'application/vnd.rar' },
];

const FTYP_BRANDS: Record<string, string> = {
  avif: 'image/avif',
  avis: 'image/avif',
  heic: 'image/heic',
  heix: 'image/heic',
  heim: 'image/heic',
  heis: 'image/heic',
  hevc: 'image/heic-sequence',
  hevx: 'image/heic-sequence',
  mif1: 'image/heif',
  msf1: 'image/heif-sequence',
  'qt  ': 'video/quicktime',
  'M4A ': 'audio/mp4',
  'M4B ': 'audio/mp4',
  'M4V ': 'video/mp4',
  isom: 'video/mp4',
  iso2: 'video/mp4',
  iso4: 'video/mp4',
  iso5: 'video/mp4',
  iso6: 'video/mp4',
  mp41: 'video/mp4',
  mp42: 'video/mp4',
  avc1: 'video/mp4',
  dash: 'video/mp4',
  '3gp4': 'video/3gpp',
  '3gp5': 'video/3gpp',
  '3gp6': 'video/3gpp',
  '3g2a': 'video/3gpp2',
};

/** ISO-BMFF: [size]['ftyp'][major brand][minor version][compatible brands...]. */
function sniffFtyp(head: Uint8Array): string | null {
  if (head.length < 12 || latin1(head, 4, 8) !== 'ftyp') return null;
  const boxSize = new DataView(head.buffer, head.byteOffset, head.length).getUint32(0);
  if (boxSize < 16) return null;
  const brands = [latin1(head, 8, 12)];
  for (let at = 16; at + 4 <= Math.min(boxSize, head.length); at += 4) brands.push(latin1(head, at, at + 4));
  // Still images in a HEIF container name a generic major brand (mif1) with avif/heic as compatible brand.
  for (const preferred of ['avif', 'avis', 'heic', 'heix', 'heim', 'heis']) {
    if (brands.includes(preferred)) return FTYP_BRANDS[preferred] ?? null;
  }
  for (const brand of brands) {
    const type = FTYP_BRANDS[brand];
    if (type) return type;
  }
  return null;
}

/** EBML: WebM when the DocType says so, else Matroska. */
function sniffEbml(head: Uint8Array): string | null {
  if (!startsWith(head, [0x1a, 0x45, 0xdf, 0xa3])) return null;
  const text = latin1(head, 0, 128);
  // DocType element (0x4282), its size, then the string.
  const docType = text.indexOf('\x42\x82');
  if (docType >= 0 && text.slice(docType + 3, docType + 7) === 'webm') return 'video/webm';
  return 'video/x-matroska';
}

function sniffRiff(head: Uint8Array): string | null {
  if (head.length < 12 || latin1(head, 0, 4) !== 'RIFF') return null;
  const form = latin1(head, 8, 12);
  if (form === 'WEBP') return 'image/webp';
  if (form === 'WAVE') return 'audio/wav';
  if (form === 'AVI ') return 'video/x-msvideo';
  return null;
}

function sniffBmp(head: Uint8Array): string | null {
  if (head.length < 26 || head[0] !== 0x42 || head[1] !== 0x4d) return null;
  const view = new DataView(head.buffer, head.byteOffset, head.length);
  if (view.getUint32(6, true) !== 0) return null; // reserved fields
  const dibHeaderSize = view.getUint32(14, true);
  return [12, 16, 40, 52, 56, 64, 108, 124].includes(dibHeaderSize) ? 'image/bmp' : null;
}

function sniffIco(head: Uint8Array): string | null {
  if (head.length < 6 || !startsWith(head, [0x00, 0x00, 0x01, 0x00])) return null;
  const count = head[4]! | (head[5]! << 8);
  return count > 0 ? 'image/x-icon' : null;
}

/** MPEG audio frame header (no ID3 tag): sync, valid version, layer, bitrate and sample rate. */
function sniffMpegFrame(head: Uint8Array): string | null {
  if (head.length < 4 || head[0] !== 0xff) return null;
  const b1 = head[1]!;
  const b2 = head[2]!;
  if ((b1 & 0xe0) !== 0xe0) return null;
  if (((b1 >> 3) & 0x03) === 0x01) return null; // reserved version
  // Layer III (MP3) or II only: 00 is reserved (and ADTS AAC), and Layer I would match the UTF-16LE BOM FF FE.
  const layer = (b1 >> 1) & 0x03;
  if (layer !== 0x01 && layer !== 0x02) return null;
  const bitrate = b2 >> 4;
  if (bitrate === 0x0 || bitrate === 0xf) return null;
  if (((b2 >> 2) & 0x03) === 0x03) return null; // reserved sample rate
  return 'audio/mpeg';
}

const ID3 = ascii('ID3');

/** ID3v2 tag (MP3): 'ID3', major version 2-4, revision byte. */
function sniffId3(head: Uint8Array): string | null {
  return head.length >= 10 && startsWith(head, ID3) && head[3]! >= 2 && head[3]! <= 4 && head[4] !== 0xff ? 'audio/mpeg' : null;
}

function sniffBinaryLabel(head: Uint8Array): string | null {
  for (const { signature, at, type } of SIMPLE_LABELS) {
    if (startsWith(head, signature, at)) return type;
  }
  return sniffFtyp(head) ?? sniffRiff(head) ?? sniffEbml(head) ?? sniffBmp(head) ?? sniffIco(head) ?? sniffId3(head) ?? sniffMpegFrame(head);
}

// ---------------------------------------------------------------------------------------
// Text

const UTF8_BOM = [0xef, 0xbb, 0xbf];

// C0 controls other than \t \n \f \r, and DEL.
const ASCII_CONTROL = /[\x00-\x08\x0b\x0e-\x1f\x7f]/;

/**
 * Valid UTF-8 without control characters other than \t \n \r \f. A multi-byte sequence cut
 * off by the end of the head counts as valid (the head is usually a prefix of the content).
 */
function isPlainUtf8(bytes: Uint8Array): boolean {
  // Most text is ASCII (logs): a native check and one regular expression instead of a loop over
  // every byte in JavaScript (~10 µs per 4 KiB head, a measurable share of a small upload's CPU).
  if (isAscii(bytes)) return !ASCII_CONTROL.test(latin1(bytes));
  let index = 0;
  while (index < bytes.length) {
    const byte = bytes[index]!;
    if (byte < 0x80) {
      if ((byte < 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0d && byte !== 0x0c) || byte === 0x7f) return false;
      index++;
      continue;
    }
    let length: number;
    let codePoint: number;
    if (byte >= 0xc2 && byte <= 0xdf) {
      length = 2;
      codePoint = byte & 0x1f;
    } else if (byte >= 0xe0 && byte <= 0xef) {
      length = 3;
      codePoint = byte & 0x0f;
    } else if (byte >= 0xf0 && byte <= 0xf4) {
      length = 4;
      codePoint = byte & 0x07;
    } else {
      return false;
    }
    if (index + length > bytes.length) {
      // Truncated at the end of the head: the bytes present must still be continuation bytes.
      for (let next = index + 1; next < bytes.length; next++) if ((bytes[next]! & 0xc0) !== 0x80) return false;
      return true;
    }
    for (let next = index + 1; next < index + length; next++) {
      const continuation = bytes[next]!;
      if ((continuation & 0xc0) !== 0x80) return false;
      codePoint = (codePoint << 6) | (continuation & 0x3f);
    }
    if (length === 3 && (codePoint < 0x800 || (codePoint >= 0xd800 && codePoint <= 0xdfff))) return false;
    if (length === 4 && (codePoint < 0x10000 || codePoint > 0x10ffff)) return false;
    if (codePoint >= 0x80 && codePoint <= 0x9f) return false; // C1 controls
    index += length;
  }
  return true;
}

/** The head as a string for pattern matching, without BOM: UTF-16 decoded, anything else byte for byte (latin1). */
function headText(head: Uint8Array): string {
  if (startsWith(head, [0xff, 0xfe])) return new TextDecoder('utf-16le').decode(head.subarray(2));
  if (startsWith(head, [0xfe, 0xff])) return new TextDecoder('utf-16be').decode(head.subarray(2));
  if (startsWith(head, UTF8_BOM)) return latin1(head, 3);
  return latin1(head);
}

// WHATWG "whitespace byte": TAB, LF, FF, CR, SPACE.
const LEADING_WHITESPACE = /^[\t\n\f\r ]*/;

// The WHATWG HTML sniffing tags (plus !doctype html handled separately); order does not matter
// because each needs a tag-terminating character after it.
const HTML_TAGS = ['html', 'head', 'script', 'iframe', 'h1', 'div', 'font', 'table', 'a', 'style', 'title', 'b', 'body', 'br', 'p'];
const TAG_END = /^(?:[\s/>]|$)/;
const XHTML_NAMESPACE = 'http://www.w3.org/1999/xhtml';
const SVG_NAMESPACE = 'http://www.w3.org/2000/svg';

function elementName(text: string, at: number): string {
  const match = /^<([a-z][\w.-]*(?::[a-z][\w.-]*)?)/i.exec(text.slice(at, at + 80));
  if (!match) return '';
  const name = match[1]!.toLowerCase();
  // A namespace prefix (<s:svg>, <h:html>) does not change what the element is.
  return name.slice(name.indexOf(':') + 1);
}

/** A WHATWG HTML pattern at `at` (lower-cased text): '<' + tag name + tag-terminating character. */
function isHtmlTagAt(text: string, at: number): boolean {
  const name = /^<([a-z0-9]+)/.exec(text.slice(at, at + 16))?.[1];
  if (!name || !HTML_TAGS.includes(name)) return false;
  return TAG_END.test(text.slice(at + 1 + name.length, at + 2 + name.length));
}

/** 'html' / 'svg' when markup text would render as a document, else null. */
function sniffMarkup(text: string): string | null {
  let at = LEADING_WHITESPACE.exec(text)![0].length;
  if (text[at] !== '<') return null;
  const lower = text.toLowerCase();

  // Skip the prolog: comments, processing instructions (<?xml ...?>), doctype. A leading comment
  // alone does not block (WHATWG would sniff '<!-- ' as HTML), so an XML file with one passes.
  for (;;) {
    if (lower.startsWith('<!--', at)) {
      const end = lower.indexOf('-->', at + 4);
      if (end < 0) break;
      at = end + 3;
    } else if (lower.startsWith('<?', at)) {
      const end = lower.indexOf('?>', at + 2);
      if (end < 0) break;
      at = end + 2;
    } else if (lower.startsWith('<!doctype', at)) {
      const rest = lower.slice(at + 9).replace(LEADING_WHITESPACE, '');
      if (/^x?html(?:[\s>\[]|$)/.test(rest)) return 'html';
      if (/^svg(?:[\s>\[]|$)/.test(rest)) return 'svg';
      const end = lower.indexOf('>', at);
      if (end < 0) break;
      at = end + 1;
    } else {
      break;
    }
    at += LEADING_WHITESPACE.exec(text.slice(at))![0].length;
  }

  if (elementName(lower, at) === 'svg') return 'svg';
  if (isHtmlTagAt(lower, at)) return 'html';
  if (/<svg[\s/>:]|<svg$|<[a-z][\w.-]*:svg[\s/>]/.test(lower) || lower.includes(SVG_NAMESPACE)) return 'svg';
  if (/<(?:html|script|iframe)(?:[\s/>]|$)/.test(lower) || lower.includes(XHTML_NAMESPACE)) return 'html';
  return null;
}

const JS_COMMENTS_AND_WHITESPACE = /^(?:\s|\/\/[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/)*/;
const IDENTIFIER = '[A-Za-z_$][\\w$]*';
const JS_STARTS: readonly RegExp[] = [
  /^(['"])use strict\1/,
  new RegExp(`^import(?:\\s*\\{|\\s*\\*\\s*as\\s|\\s*['"]|\\s+${IDENTIFIER}\\s*(?:,\\s*[{*]|\\s+from\\s*['"]))`),
  /^import\s*\(\s*['"`]/,
  /^export\s+(?:default\s|const\s|let\s|var\s|function\b|class\s|async\s)|^export\s*[{*]/,
  new RegExp(`^(?:async\\s+)?function\\s*\\*?\\s*(?:${IDENTIFIER})?\\s*\\([^)]*\\)\\s*\\{`),
  /^[;!+~-]?\(\s*(?:async\s+)?function\s*\*?\s*[\w$]*\s*\(/,
  /^[!+~-]function\s*\*?\s*[\w$]*\s*\(/,
  /^[;!]?\(\s*(?:async\s*)?\(\s*[^)]*\)\s*=>/,
  /^[;!]?\(\s*async\s*(?:function\b|[\w$]+\s*=>)/,
  new RegExp(`^(?:var|let|const)\\s+(?:${IDENTIFIER}|\\{[^}]*\\}|\\[[^\\]]*\\])\\s*(?:=|;|,)`),
  new RegExp(`^class\\s+${IDENTIFIER}\\s*(?:extends\\s+[\\w$.]+\\s*)?\\{`),
  new RegExp(`^(?:window|document|globalThis|self)\\s*\\.\\s*${IDENTIFIER}(?:\\s*\\.\\s*${IDENTIFIER})*(?:\\(|\\[|\\s*=(?!=))`),
  /^module\s*\.\s*exports\b/,
  new RegExp(`^exports\\s*\\.\\s*${IDENTIFIER}\\s*=`),
  /^require\s*\(\s*['"`]/,
  /^define\s*\(\s*(?:\[|function\b|['"])/,
];

function looksLikeScript(text: string): boolean {
  const rest = text.slice(JS_COMMENTS_AND_WHITESPACE.exec(text)![0].length);
  return JS_STARTS.some((pattern) => pattern.test(rest));
}

/**
 * Whether `text` is a valid prefix of a single JSON value (whitespace around allowed), starting
 * with an object or array. A value may be cut off anywhere by the end of the head.
 */
function isJsonPrefix(text: string): boolean {
  const stack: ('{' | '[')[] = [];
  // What may come next: a value, an object key (or '}' right after '{'), ':', ',' or a closer, or nothing but whitespace.
  let expect: 'value' | 'firstValue' | 'key' | 'firstKey' | 'colon' | 'after' | 'end' = 'value';
  let index = 0;
  const length = text.length;
  const scanString = (): boolean | null => {
    // At the opening quote. true: complete; null: cut off (a valid prefix); false: invalid.
    index++;
    while (index < length) {
      const char = text.charCodeAt(index);
      if (char === 0x22) {
        index++;
        return true;
      }
      if (char < 0x20) return false;
      if (char === 0x5c) {
        const escape = text[index + 1];
        if (escape === undefined) return null;
        if (escape === 'u') {
          const hex = text.slice(index + 2, index + 6);
          if (!/^[0-9a-fA-F]*$/.test(hex)) return false;
          if (hex.length < 4) return null;
          index += 6;
          continue;
        }
        if (!'"\\/bfnrt'.includes(escape)) return false;
        index += 2;
        continue;
      }
      index++;
    }
    return null;
  };
  while (index < length) {
    const char = text[index]!;
    if (char === ' ' || char === '\t' || char === '\n' || char === '\r') {
      index++;
      continue;
    }
    if (expect === 'end') return false;
    if (expect === 'colon') {
      if (char !== ':') return false;
      expect = 'value';
      index++;
      continue;
    }
    if (expect === 'after') {
      const top = stack[stack.length - 1];
      if (char === ',') {
        expect = top === '{' ? 'key' : 'value';
      } else if ((char === '}' && top === '{') || (char === ']' && top === '[')) {
        stack.pop();
        expect = stack.length === 0 ? 'end' : 'after';
      } else {
        return false;
      }
      index++;
      continue;
    }
    if (expect === 'key' || expect === 'firstKey') {
      if (char === '}' && expect === 'firstKey') {
        stack.pop();
        expect = stack.length === 0 ? 'end' : 'after';
        index++;
        continue;
      }
      if (char !== '"') return false;
      const complete = scanString();
      if (complete === null) return true;
      if (!complete) return false;
      expect = 'colon';
      continue;
    }
    // A value.
    if (char === ']' && expect === 'firstValue') {
      stack.pop();
      expect = stack.length === 0 ? 'end' : 'after';
      index++;
      continue;
    }
    if (char === '{' || char === '[') {
      stack.push(char);
      expect = char === '{' ? 'firstKey' : 'firstValue';
      index++;
      continue;
    }
    if (stack.length === 0) return false; // the top level must be an object or array
    if (char === '"') {
      const complete = scanString();
      if (complete === null) return true;
      if (!complete) return false;
      expect = 'after';
      continue;
    }
    const literal = /^(?:true|false|null)/.exec(text.slice(index, index + 5));
    if (literal) {
      index += literal[0].length;
      expect = 'after';
      continue;
    }
    const tail = text.slice(index, index + 8);
    if (['true', 'false', 'null'].some((word) => word.startsWith(tail) && tail.length < word.length)) return true;
    // A number cut off by the end of the head ("-", "1.", "1e", "1e+").
    if (/^(?:-|-?(?:0|[1-9]\d*)(?:\.\d*)?(?:[eE][+-]?\d*)?)$/.test(text.slice(index))) return true;
    const number = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(index, index + 400));
    if (number) {
      index += number[0].length;
      expect = 'after'; // whatever follows must be a delimiter: "2024-01-01" fails there
      continue;
    }
    return false;
  }
  return stack.length > 0 || expect === 'end';
}

/** Sniffs the first bytes of a file (callers pass up to MAX_SNIFF_BYTES; more are ignored). */
export function sniffContent(head: Uint8Array): SniffResult {
  if (head.length > MAX_SNIFF_BYTES) head = head.subarray(0, MAX_SNIFF_BYTES);
  if (head.length === 0) return result(null);

  if (EXECUTABLE_SIGNATURES.some((signature) => startsWith(head, signature))) return result(null, 'executable');
  const plainUtf8 = isPlainUtf8(startsWith(head, UTF8_BOM) ? head.subarray(3) : head);
  if (head[0] === 0x4d && head[1] === 0x5a && !plainUtf8) return result(null, 'executable');
  const afterBom = startsWith(head, UTF8_BOM) ? 3 : 0;
  if (head[afterBom] === 0x23 && head[afterBom + 1] === 0x21) return result(null, 'shell script');

  // UTF-16 text (by BOM) is text, whatever its first bytes would mean as binary.
  const utf16 = startsWith(head, [0xff, 0xfe]) || startsWith(head, [0xfe, 0xff]);
  const label = utf16 ? null : sniffBinaryLabel(head);
  if (label) return result(label);

  const text = headText(head);
  const markup = sniffMarkup(text);
  if (markup) return result(null, markup);
  if (looksLikeScript(text)) return result(null, 'javascript');

  if (!plainUtf8) return result(null);
  const body = text.replace(LEADING_WHITESPACE, '');
  if ((body[0] === '{' || body[0] === '[') && isJsonPrefix(new TextDecoder().decode(head))) return result('application/json');
  return result(TEXT_PLAIN);
}
