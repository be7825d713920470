import type { ObjectStore } from '../../storage/object-store.ts';
import { readBuffer } from '../../storage/read-buffer.ts';
import { gunzipPieces, isZlibError } from './gunzip-pieces.ts';
import { continuationBytesAtStart, FirstLines, LastLines, LineSplitter, withinCharacters, type Line } from './text-lines.ts';

/**
 * The first or last lines of a stored text file, read in ranges so that a large file costs no
 * more than the bounds below (docs/api.md, "Preview a text file"):
 *
 * - text, from the start: ranges forward from byte 0 until `lines` lines are complete;
 * - text, from the end: ranges backwards from the end until `lines` line breaks are seen, then
 *   those bytes are split forward (a character cut by the first range's start loses its bytes);
 * - gzip: decompressed as a stream from the start (gzip cannot be read backwards); from the end,
 *   only the last `lines` lines are kept while at most GZIP_TAIL_BOUND decompressed bytes go by.
 *
 * Every bound that stops a read before the answer is exact sets `truncated`.
 */

export const DEFAULT_PREVIEW_LINES = 50;
export const MAX_PREVIEW_LINES = 1000;
/** Bytes a preview reads from storage at most; for gzip from the start, also the decompressed bytes at most. */
export const PREVIEW_READ_BOUND = 256 * 1024;
/** Decompressed (and compressed) bytes a gzip preview from the end goes through at most. */
export const GZIP_TAIL_BOUND = 8 * 1024 * 1024;
/** Characters of one line in an answer; the rest of a longer line is left out and the line is listed in `cutLines`. */
export const MAX_LINE_CHARS = 4096;
/** Characters of all lines of an answer together. */
export const MAX_PREVIEW_CHARS = 256 * 1024;

/** The first range; each next one is twice as long, up to the last. Most previews need one range. */
const FIRST_RANGE_BYTES = 16 * 1024;
const LAST_RANGE_BYTES = 1024 * 1024;

export type PreviewFrom = 'start' | 'end';
export const PREVIEW_FROM: readonly PreviewFrom[] = ['end', 'start'];

/** How the stored bytes hold the text. */
export type PreviewEncoding = 'text' | 'gzip';

/** Bare types that are text besides text/*. */
const TEXT_TYPES = new Set(['application/json', 'application/x-ndjson']);
const GZIP_TYPES = new Set(['application/gzip', 'application/x-gzip']);
/** A gzipped text file: `x.log.gz`, `x.csv.gz`, rotated logs such as `x.log.3.gz` and `x.log-20261123.gz`. */
const GZIPPED_TEXT_NAME = /\.(?:log|txt|text|json|ndjson|jsonl|csv|tsv|md)(?:[.-]\d{1,8})?\.gz$/i;

/**
 * How a stored file can be previewed, by its stored (sniffed) content type and its name: 'text' for
 * text/* and JSON, 'gzip' for gzip content named as a gzipped text file, null for anything else.
 */
export function previewEncoding(contentType: string, fileName: string): PreviewEncoding | null {
  const type = contentType.split(';', 1)[0]!.trim().toLowerCase();
  if (type.startsWith('text/') || TEXT_TYPES.has(type)) return 'text';
  if (GZIP_TYPES.has(type) && GZIPPED_TEXT_NAME.test(fileName)) return 'gzip';
  return null;
}

/** Bytes start..end (inclusive) of one object. */
export type RangeReader = (start: number, end: number) => Promise<Buffer>;

/** A RangeReader of one object of a store. Rejects with the store's StorageError (not-found, unavailable, ...). */
export function storeRangeReader(store: Pick<ObjectStore, 'read'>, key: string): RangeReader {
  return (start, end) => readBuffer(store, key, { start, end });
}

export interface TextPreviewOptions {
  /** The object's size in bytes. */
  size: number;
  encoding: PreviewEncoding;
  lines: number;
  from: PreviewFrom;
  /** Stops between two reads (the request went away). */
  signal?: AbortSignal;
}

export interface TextPreview {
  lines: string[];
  /** Indexes into `lines` of the lines not shown whole. */
  cutLines: number[];
  /** A bound stopped the reading: `lines` are not exactly the first (last) lines asked for. */
  truncated: boolean;
  /** Bytes read from storage. */
  bytesRead: number;
  /** gzip: bytes decompressed; null for plain text. */
  decompressedBytes: number | null;
}

interface Collected {
  lines: Line[];
  truncated: boolean;
  bytesRead: number;
  decompressedBytes: number | null;
}

/** The preview of one stored file: its lines, then bounded to MAX_PREVIEW_CHARS characters in all. */
export async function readTextPreview(read: RangeReader, options: TextPreviewOptions): Promise<TextPreview> {
  const { size, lines: count, from, signal } = options;
  let collected: Collected;
  if (options.encoding === 'gzip') collected = await gzipLines(read, size, count, from, signal);
  else if (from === 'start') collected = await firstTextLines(read, size, count, signal);
  else collected = await lastTextLines(read, size, count, signal);
  const bounded = withinCharacters(collected.lines, MAX_PREVIEW_CHARS, from);
  const cutLines: number[] = [];
  bounded.lines.forEach((line, index) => line.cut && cutLines.push(index));
  return {
    lines: bounded.lines.map((line) => line.text),
    cutLines,
    truncated: collected.truncated || bounded.dropped,
    bytesRead: collected.bytesRead,
    decompressedBytes: collected.decompressedBytes,
  };
}

/** The lengths of consecutive ranges covering `total` bytes: FIRST_RANGE_BYTES, doubling up to LAST_RANGE_BYTES. */
function* rangeLengths(total: number): Generator<number> {
  let length = FIRST_RANGE_BYTES;
  for (let covered = 0; covered < total; covered += length, length = Math.min(length * 2, LAST_RANGE_BYTES)) {
    yield Math.min(length, total - covered);
  }
}

async function firstTextLines(read: RangeReader, size: number, count: number, signal?: AbortSignal): Promise<Collected> {
  const first = new FirstLines(count, MAX_LINE_CHARS);
  const splitter = new LineSplitter(first.add, { maxLineChars: MAX_LINE_CHARS, atFileStart: true, satisfied: () => first.full });
  let offset = 0;
  for (const length of rangeLengths(Math.min(size, PREVIEW_READ_BOUND))) {
    if (first.full) break;
    signal?.throwIfAborted();
    splitter.push(await read(offset, offset + length - 1));
    offset += length;
  }
  const truncated = !first.full && offset < size;
  if (!first.full) splitter.end(truncated ? 'bound' : 'eof');
  return { lines: first.lines, truncated, bytesRead: offset, decompressedBytes: null };
}

function countNewlines(bytes: Buffer, upTo: number): number {
  let found = 0;
  for (let at = bytes.indexOf(0x0a); at >= 0 && at < upTo; at = bytes.indexOf(0x0a, at + 1)) found++;
  return found;
}

async function lastTextLines(read: RangeReader, size: number, count: number, signal?: AbortSignal): Promise<Collected> {
  const stop = Math.max(0, size - PREVIEW_READ_BOUND);
  const pieces: Buffer[] = [];
  let position = size;
  let newlines = 0;
  // `count` line breaks before the last line mean `count` whole lines after the first break.
  for (const length of rangeLengths(size - stop)) {
    if (newlines >= count) break;
    signal?.throwIfAborted();
    const bytes = await read(position - length, position - 1);
    // A line break ending the file ends the last line; it starts none.
    const counted = position === size && bytes.at(-1) === 0x0a ? bytes.length - 1 : bytes.length;
    newlines += countNewlines(bytes, counted);
    pieces.unshift(bytes);
    position -= length;
  }
  const last = new LastLines(count, MAX_LINE_CHARS);
  const startsInsideLine = position > 0;
  const splitter = new LineSplitter(last.add, { maxLineChars: MAX_LINE_CHARS, startsInsideLine, atFileStart: !startsInsideLine, keepLast: count });
  if (startsInsideLine && pieces.length > 0) pieces[0] = pieces[0]!.subarray(continuationBytesAtStart(pieces[0]!));
  for (const piece of pieces) splitter.push(piece);
  splitter.end('eof');
  return { lines: last.lines, truncated: startsInsideLine && newlines < count, bytesRead: size - position, decompressedBytes: null };
}

async function gzipLines(read: RangeReader, size: number, count: number, from: PreviewFrom, signal?: AbortSignal): Promise<Collected> {
  const bound = from === 'start' ? PREVIEW_READ_BOUND : GZIP_TAIL_BOUND;
  const first = from === 'start' ? new FirstLines(count, MAX_LINE_CHARS) : null;
  const last = from === 'end' ? new LastLines(count, MAX_LINE_CHARS) : null;
  const splitter = new LineSplitter((first ?? last)!.add, {
    maxLineChars: MAX_LINE_CHARS, atFileStart: true, ...(first && { satisfied: () => first.full }), ...(last && { keepLast: count }),
  });
  let bytesRead = 0;
  let decompressed = 0;
  async function* compressed(): AsyncGenerator<Buffer> {
    for (const length of rangeLengths(Math.min(size, bound))) {
      signal?.throwIfAborted();
      const bytes = await read(bytesRead, bytesRead + length - 1);
      bytesRead += bytes.length;
      yield bytes;
    }
  }

  let damaged = false;
  try {
    for await (const piece of gunzipPieces(compressed())) {
      const used = piece.subarray(0, bound - decompressed);
      decompressed += used.length;
      splitter.push(used);
      if (first?.full || decompressed >= bound) break;
    }
  } catch (error) {
    if (!isZlibError(error)) throw error;
    damaged = true;
  }
  if (first?.full) return { lines: first.lines, truncated: false, bytesRead, decompressedBytes: decompressed };
  // Stopped by a bound (decompressed or compressed) or by damage: more text may follow, unread.
  const truncated = damaged || decompressed >= bound || bytesRead < size;
  splitter.end(truncated ? 'bound' : 'eof');
  return { lines: (first ?? last)!.lines, truncated, bytesRead, decompressedBytes: decompressed };
}
