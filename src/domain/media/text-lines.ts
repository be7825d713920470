/**
 * Lines out of bytes, for text previews (text-preview.ts). Bytes are split at '\n' (0x0A) before they
 * are decoded, which is the same as splitting the decoded text: the byte 0x0A is never part of a
 * longer UTF-8 character, and a decoder ends an invalid sequence at it. Each line is then decoded as
 * UTF-8 with every invalid sequence replaced by U+FFFD; a '\r' before the '\n' is dropped (CRLF
 * files read like LF files); a line longer than `maxLineChars` keeps only its first characters and
 * is marked cut. Bytes may come in pieces of any size: a character split between two pieces
 * decodes whole. Lines are only decoded when kept, so going through many costs little.
 * Pure module: no I/O.
 *
 * Lines of a text: "a\nb" and "a\nb\n" are both ["a", "b"]; "\n" is [""]; "" has no line.
 */

export interface Line {
  text: string;
  /** Not all of the line is in `text`: it was longer than the line limit, or the read stopped (or started) inside it. */
  cut: boolean;
}

/** Why the bytes stopped: the end of the file, or a bound (the text goes on, unread). */
export type LinesEnd = 'eof' | 'bound';

/** A line as bytes, not decoded yet. */
export interface RawLine {
  bytes: Uint8Array;
  /** Bytes of the line were left out (beyond the line limit, or before or after what was read). */
  cut: boolean;
  /** The line ends inside a character whose other bytes were not read: drop them instead of replacing them. */
  endsInsideCharacter: boolean;
}

export interface LineSplitterOptions {
  maxLineChars: number;
  /** The bytes start inside a line (a read backwards stopped there): the first line is marked cut. */
  startsInsideLine?: boolean;
  /** The bytes start at the file's start: a UTF-8 byte order mark there is dropped. */
  atFileStart?: boolean;
  /** Only the last `keepLast` lines matter: lines that many later lines follow within one piece are skipped, not emitted. */
  keepLast?: number;
  /** Once true, the rest of a piece is not split (the consumer has all the lines it wants). */
  satisfied?: () => boolean;
}

const BOM = [0xef, 0xbb, 0xbf];
const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

/** `text` without a lone high surrogate at its end (half of a character cut by slice()). */
function withoutHalfCharacter(text: string): string {
  const last = text.charCodeAt(text.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? text.slice(0, -1) : text;
}

/** A raw line decoded, at most `maxLineChars` characters. */
export function decodeLine(raw: RawLine, maxLineChars: number): Line {
  let text: string;
  if (raw.endsInsideCharacter) {
    // Streaming keeps an incomplete last character back instead of replacing it; the flush drops it.
    text = decoder.decode(raw.bytes, { stream: true });
    decoder.decode();
  } else {
    text = decoder.decode(raw.bytes);
  }
  if (text.length <= maxLineChars) return { text, cut: raw.cut };
  return { text: withoutHalfCharacter(text.slice(0, maxLineChars)), cut: true };
}

/** Splits pieces of bytes into raw lines and hands each to `onLine`, in order. */
export class LineSplitter {
  readonly #onLine: (line: RawLine) => void;
  /** Bytes of a line kept at most: enough for maxLineChars + 1 characters (3 bytes make at least 1), and a '\r'. */
  readonly #maxLineBytes: number;
  readonly #keepLast: number | undefined;
  readonly #satisfied: (() => boolean) | undefined;
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  /** Bytes of the pending line dropped beyond #maxLineBytes. */
  #overflow = false;
  #nextIsCut: boolean;
  #atFileStart: boolean;

  constructor(onLine: (line: RawLine) => void, options: LineSplitterOptions) {
    this.#onLine = onLine;
    this.#maxLineBytes = 3 * (options.maxLineChars + 1) + 1;
    this.#keepLast = options.keepLast;
    this.#satisfied = options.satisfied;
    this.#nextIsCut = options.startsInsideLine ?? false;
    this.#atFileStart = options.atFileStart ?? false;
  }

  push(bytes: Uint8Array): void {
    let from = this.#skipSuperseded(bytes);
    for (let newline = bytes.indexOf(0x0a, from); newline >= 0; newline = bytes.indexOf(0x0a, from)) {
      this.#append(bytes, from, newline);
      this.#emit(true, false);
      if (this.#satisfied?.()) return;
      from = newline + 1;
    }
    this.#append(bytes, from, bytes.length);
  }

  /**
   * No more bytes. At the end of the file the last line counts whole (an incomplete character there
   * is invalid: U+FFFD); at a bound, the last line, if it has begun, is cut (and a character cut by
   * the bound is dropped: its rest is unread).
   */
  end(reason: LinesEnd): void {
    if (this.#pendingBytes === 0 && !this.#overflow) return;
    if (reason === 'bound') this.#nextIsCut = true;
    this.#emit(reason === 'eof', reason === 'bound');
  }

  /** Where to go on in `bytes`: past everything that keepLast later lines in `bytes` alone supersede. */
  #skipSuperseded(bytes: Uint8Array): number {
    if (this.#keepLast === undefined) return 0;
    // The (keepLast + 1)-th line break from the end ends the last line not needed.
    let at = bytes.length;
    for (let found = 0; found <= this.#keepLast; found++) {
      at = at === 0 ? -1 : bytes.lastIndexOf(0x0a, at - 1);
      if (at < 0) return 0;
    }
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#overflow = false;
    this.#nextIsCut = false;
    this.#atFileStart = false;
    return at + 1;
  }

  #append(bytes: Uint8Array, from: number, to: number): void {
    const room = this.#maxLineBytes - this.#pendingBytes;
    if (to - from > room) {
      this.#overflow = true;
      to = from + room;
    }
    if (to > from) {
      this.#pending.push(bytes.subarray(from, to));
      this.#pendingBytes += to - from;
    }
  }

  /** `ended`: the line's end was seen (a '\n', or the end of the file), so a final '\r' is the CRLF's. */
  #emit(ended: boolean, stoppedByBound: boolean): void {
    let line = this.#pending.length === 1 ? this.#pending[0]! : Buffer.concat(this.#pending);
    if (this.#atFileStart && BOM.every((byte, index) => line[index] === byte)) line = line.subarray(BOM.length);
    if (ended && !this.#overflow && line.at(-1) === 0x0d) line = line.subarray(0, -1);
    this.#onLine({ bytes: line, cut: this.#nextIsCut || this.#overflow, endsInsideCharacter: stoppedByBound || this.#overflow });
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#overflow = false;
    this.#nextIsCut = false;
    this.#atFileStart = false;
  }
}

/** The first `count` lines, decoded; `full` once it has them (more bytes are then not needed). */
export class FirstLines {
  readonly lines: Line[] = [];
  readonly #count: number;
  readonly #maxLineChars: number;

  constructor(count: number, maxLineChars: number) {
    this.#count = count;
    this.#maxLineChars = maxLineChars;
  }

  get full(): boolean {
    return this.lines.length >= this.#count;
  }

  readonly add = (raw: RawLine): void => {
    if (!this.full) this.lines.push(decodeLine(raw, this.#maxLineChars));
  };
}

/** The last `count` lines seen, decoded when asked for; compacted now and then so adding stays O(1). */
export class LastLines {
  #kept: RawLine[] = [];
  readonly #count: number;
  readonly #maxLineChars: number;

  constructor(count: number, maxLineChars: number) {
    this.#count = count;
    this.#maxLineChars = maxLineChars;
  }

  get lines(): Line[] {
    return this.#kept.slice(-this.#count).map((raw) => decodeLine(raw, this.#maxLineChars));
  }

  readonly add = (raw: RawLine): void => {
    this.#kept.push(raw);
    if (this.#kept.length >= 2 * this.#count) this.#kept = this.#kept.slice(-this.#count);
  };
}

/**
 * Lines holding at most `maxChars` characters in all, taken from the start (`from: 'start'`) or from the
 * end; `dropped` when lines had to go.
 */
export function withinCharacters(lines: Line[], maxChars: number, from: 'start' | 'end'): { lines: Line[]; dropped: boolean } {
  const ordered = from === 'start' ? lines : [...lines].reverse();
  const kept: Line[] = [];
  let total = 0;
  for (const line of ordered) {
    total += line.text.length;
    if (total > maxChars) break;
    kept.push(line);
  }
  if (kept.length === lines.length) return { lines, dropped: false };
  return { lines: from === 'start' ? kept : kept.reverse(), dropped: true };
}

/** Bytes at the start of `bytes` that continue a character begun before them (at most 3: a UTF-8 character has 4 bytes at most). */
export function continuationBytesAtStart(bytes: Uint8Array): number {
  let count = 0;
  while (count < 3 && count < bytes.length && (bytes[count]! & 0xc0) === 0x80) count++;
  return count;
}
