import { exifOrientation, startsWith } from './exif-orientation.ts';
import { joinParts, MalformedImageError, type FilteredImage } from './filtered-image.ts';

const SOI = 0xd8;
const EOI = 0xd9;
const SOS = 0xda;
const TEM = 0x01;
const APP0 = 0xe0;
const APP1 = 0xe1;
const APP2 = 0xe2;
const APP14 = 0xee;
const APP15 = 0xef;
const COM = 0xfe;
const EXIF_ID = [0x45, 0x78, 0x69, 0x66, 0x00, 0x00]; // "Exif\0\0"
const ICC_ID = [...Buffer.from('ICC_PROFILE\0', 'latin1')];

const isRestart = (code: number) => code >= 0xd0 && code <= 0xd7;

/**
 * Whether a segment is metadata to leave out. Kept: APP0 (JFIF), APP2 only with an ICC profile
 * (colours), APP14 (Adobe: how to read CMYK). Left out: APP1 (EXIF, XMP), APP13 (IPTC,
 * Photoshop), the other APPn (maker notes, MPF previews) and comments.
 */
function isMetadata(code: number, payload: Uint8Array): boolean {
  if (code === COM) return true;
  if (code < APP0 || code > APP15) return false;
  if (code === APP0 || code === APP14) return false;
  if (code === APP2) return !startsWith(payload, ICC_ID);
  return true;
}

function truncated(): MalformedImageError {
  return new MalformedImageError('The JPEG ends before its end marker');
}

/**
 * A JPEG without its metadata segments, walking its markers (ITU T.81 B.1): each segment's length
 * is read and the entropy-coded data after each SOS is scanned for the next marker (0xFF not
 * followed by a stuffed zero or a restart). Bytes after EOI (trailers, MPF preview images) go too.
 */
export function stripJpegMetadata(input: Uint8Array): FilteredImage {
  if (input.length < 4 || input[0] !== 0xff || input[1] !== SOI) throw new MalformedImageError('The file does not start like a JPEG');
  const kept: Uint8Array[] = [input.subarray(0, 2)];
  let changed = false;
  let orientation: number | null = null;
  let pos = 2;
  for (;;) {
    if (pos >= input.length) throw truncated();
    if (input[pos] !== 0xff) throw new MalformedImageError(`The JPEG has no marker where one must be (byte ${pos})`);
    let codeAt = pos + 1;
    while (codeAt < input.length && input[codeAt] === 0xff) codeAt++; // fill bytes
    if (codeAt >= input.length) throw truncated();
    const code = input[codeAt]!;
    if (code === EOI) {
      kept.push(input.subarray(codeAt - 1, codeAt + 1));
      if (codeAt + 1 < input.length) changed = true;
      break;
    }
    if (code === TEM || isRestart(code)) {
      kept.push(input.subarray(codeAt - 1, codeAt + 1));
      pos = codeAt + 1;
      continue;
    }
    if (code === 0x00 || code === SOI) throw new MalformedImageError(`The JPEG has an invalid marker (byte ${codeAt})`);
    if (codeAt + 3 > input.length) throw truncated();
    const length = (input[codeAt + 1]! << 8) | input[codeAt + 2]!;
    const end = codeAt + 1 + length;
    if (length < 2) throw new MalformedImageError(`The JPEG has a segment of invalid length (byte ${codeAt})`);
    if (end > input.length) throw truncated();
    const payload = input.subarray(codeAt + 3, end);
    if (isMetadata(code, payload)) {
      if (code === APP1 && orientation === null && startsWith(payload, EXIF_ID)) orientation = exifOrientation(payload);
      changed = true;
    } else {
      kept.push(input.subarray(codeAt - 1, end));
    }
    pos = end;
    if (code === SOS) pos = scanEntropyData(input, pos, kept);
  }
  if (!changed) return { data: input, changed, orientation, animated: false, lossless: false };
  return { data: joinParts(kept), changed, orientation, animated: false, lossless: false };
}

/** Keeps the entropy-coded data from `start` up to the next marker and answers the marker's position. */
function scanEntropyData(input: Uint8Array, start: number, kept: Uint8Array[]): number {
  // Buffer's indexOf is memchr; a Uint8Array's compares byte by byte (5x slower on a 12 MP photo).
  const bytes = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  let scan = start;
  for (;;) {
    const ff = bytes.indexOf(0xff, scan);
    if (ff === -1 || ff + 1 >= input.length) throw truncated();
    const next = input[ff + 1]!;
    if (next === 0x00 || isRestart(next) || next === 0xff) {
      scan = ff + 1;
      continue;
    }
    kept.push(input.subarray(start, ff));
    return ff;
  }
}
