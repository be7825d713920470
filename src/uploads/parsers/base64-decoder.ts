import { badRequest } from '../../errors/errors.ts';

const NON_ALPHABET = /[^A-Za-z0-9+/]/;
const WHITESPACE_ALL = /[\r\n ]+/g;
const ONLY_PADDING = /^=+$/;
/** The last quantum, whole or still arriving: 2-3 alphabet characters, then its '='s. */
const FINAL_QUANTUM = /^[A-Za-z0-9+/]{2,3}=*$/;
/** V8 joins two strings into a rope (a ConsString) from this combined length on; shorter joins are copied flat. */
const ROPE_MIN_LENGTH = 13;

export function invalidBase64(): Error {
  return badRequest('file is not valid base64', 'file');
}

/**
 * Decodes `block` (a multiple of 4 characters, none above U+00FF) if it is all standard-alphabet
 * characters; null otherwise. Validation without a per-character loop: Node's decoder skips (or
 * stops at) every character outside its alphabet, so the output is exactly 3/4 of the input
 * length only when every character was decoded. Its alphabet also takes the URL-safe '-' and
 * '_', so those are ruled out separately.
 */
function decodePlain(block: string): Buffer | null {
  const bytes = Buffer.from(block, 'base64');
  if (bytes.length * 4 !== block.length * 3) return null;
  if (block.indexOf('-') !== -1 || block.indexOf('_') !== -1) return null;
  return bytes;
}

/**
 * Decodes a base64 text given in pieces of any size, strictly: the standard alphabet, `=` padding
 * only to complete the very last quantum, CR, LF and space ignored anywhere, anything else
 * refused, and the text (without whitespace) must be whole 4-character quanta. At most 3
 * characters are held between pieces. The pieces must not hold characters above U+00FF (the
 * caller rules them out). write()/end() throw a 400 'file is not valid base64'.
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
    if (this.carry.length > 0 && this.carry.length + text.length >= ROPE_MIN_LENGTH) {
      // The carried characters are completed from the head of `text` and the rest goes on alone:
      // `carry + text` would be a rope that every scan below first copies into a flat string. Two
      // writes decode what one would (the pieces may be cut anywhere).
      const head = 4 - this.carry.length;
      this.write(text.slice(0, head));
      this.write(text.slice(head));
      return;
    }
    const joined = this.carry.length > 0 ? this.carry + text : text;
    // Native scans decide the path, so a text is decoded once and never run through a regular
    // expression whole: whitespace (MIME line breaks) is stripped only when there is some, and
    // only a text holding the padding takes the padded path (every upload's last piece whose
    // size is not a multiple of 3).
    const s = hasWhitespace(joined) ? joined.replace(WHITESPACE_ALL, '') : joined;
    if (s.indexOf('=') !== -1) this.decodePadded(s);
    else if (!this.decodeWhole(s)) throw invalidBase64();
  }

  end(): void {
    if (this.carry.replace(WHITESPACE_ALL, '').length !== 0) throw invalidBase64();
    this.carry = '';
  }

  /** Decodes the whole quanta of `s` if they are plain alphabet characters, keeping the rest as carry. */
  private decodeWhole(s: string): boolean {
    const whole = s.length - (s.length % 4);
    if (whole === 0) {
      if (NON_ALPHABET.test(s)) return false;
      this.carry = s;
      return true;
    }
    const bytes = decodePlain(whole === s.length ? s : s.slice(0, whole));
    if (bytes === null) return false;
    const rest = s.slice(whole);
    if (NON_ALPHABET.test(rest)) return false;
    this.carry = rest;
    this.onBytes(bytes);
    return true;
  }

  /** `s` has no whitespace and holds a '=': valid only as data ending in the padded final quantum. */
  private decodePadded(s: string): void {
    const padding = s.indexOf('=');
    if (!ONLY_PADDING.test(s.slice(padding))) throw invalidBase64();
    const quantumStart = padding - (padding % 4);
    // A final quantum holds 2 or 3 data characters before its padding.
    if (padding - quantumStart < 2) throw invalidBase64();
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
    if (quantum.length > 4 || !FINAL_QUANTUM.test(quantum)) throw invalidBase64();
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

function hasWhitespace(text: string): boolean {
  return text.indexOf('\n') !== -1 || text.indexOf('\r') !== -1 || text.indexOf(' ') !== -1;
}
