import { exifOrientation, startsWith } from './exif-orientation.ts';
import { joinParts, MalformedImageError, type FilteredImage } from './filtered-image.ts';

const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/**
 * Chunks kept: those that draw the image (critical chunks, transparency, colour space, pixel
 * size, animation). Every other ancillary chunk goes: eXIf, tEXt, zTXt and iTXt (where XMP
 * lives), tIME, and chunks of other programs, which may carry anything.
 */
const KEPT_CHUNKS = new Set([
  'IHDR', 'PLTE', 'IDAT', 'IEND', 'tRNS', 'cHRM', 'gAMA', 'iCCP', 'sBIT', 'sRGB', 'cICP', 'mDCV', 'cLLI', 'mDCv', 'cLLi', 'bKGD', 'hIST', 'pHYs',
  'sPLT', 'acTL', 'fcTL', 'fdAT',
]);

const isLetter = (byte: number) => (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a);

/**
 * A PNG without its metadata chunks, walking its chunks (PNG 3rd edition, 5.3); each kept chunk
 * is copied as it is, with its CRC. Bytes after IEND go too. A critical chunk this filter does
 * not know cannot be left out and cannot be vouched for: the image is refused.
 */
export function stripPngMetadata(input: Uint8Array): FilteredImage {
  if (!startsWith(input, SIGNATURE)) throw new MalformedImageError('The file does not start like a PNG');
  const view = new DataView(input.buffer, input.byteOffset, input.byteLength);
  const kept: Uint8Array[] = [input.subarray(0, SIGNATURE.length)];
  let changed = false;
  let orientation: number | null = null;
  let animated = false;
  let pos = SIGNATURE.length;
  for (;;) {
    if (pos + 12 > input.length) throw new MalformedImageError('The PNG ends before its IEND chunk');
    const length = view.getUint32(pos);
    const typeBytes = input.subarray(pos + 4, pos + 8);
    if (!typeBytes.every(isLetter)) throw new MalformedImageError(`The PNG has an invalid chunk type (byte ${pos + 4})`);
    const type = Buffer.from(typeBytes).toString('latin1');
    if (pos === SIGNATURE.length && type !== 'IHDR') throw new MalformedImageError('The PNG does not start with IHDR');
    const end = pos + 12 + length;
    if (end > input.length) throw new MalformedImageError('The PNG ends before its IEND chunk');
    if (KEPT_CHUNKS.has(type)) {
      kept.push(input.subarray(pos, end));
      if (type === 'acTL') animated = true;
    } else if ((typeBytes[0]! & 0x20) === 0) {
      throw new MalformedImageError(`The PNG has a critical chunk ${type} that is not known`);
    } else {
      if (type === 'eXIf' && orientation === null) orientation = exifOrientation(input.subarray(pos + 8, pos + 8 + length));
      changed = true;
    }
    pos = end;
    if (type === 'IEND') break;
  }
  if (pos < input.length) changed = true;
  return { data: changed ? joinParts(kept) : input, changed, orientation, animated, lossless: true };
}
