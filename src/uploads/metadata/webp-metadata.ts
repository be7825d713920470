import { exifOrientation } from './exif-orientation.ts';
import { joinParts, MalformedImageError, type FilteredImage } from './filtered-image.ts';

/** Chunks kept: the image data, its alpha, animation and ICC profile (EXIF, XMP and unknown chunks go). */
const KEPT_CHUNKS = new Set(['VP8 ', 'VP8L', 'VP8X', 'ALPH', 'ANIM', 'ANMF', 'ICCP']);
const FIRST_CHUNKS = new Set(['VP8 ', 'VP8L', 'VP8X']);
/** VP8X flags: EXIF present, XMP present, animation. */
const EXIF_FLAG = 0x08;
const XMP_FLAG = 0x04;
const ANIMATION_FLAG = 0x02;

const fourCc = (input: Uint8Array, at: number) => Buffer.from(input.subarray(at, at + 4)).toString('latin1');

/**
 * A WebP without its EXIF and XMP chunks, walking the RIFF chunks (WebP container
 * specification); the VP8X flags that announced them are cleared and the RIFF size is written
 * anew. Bytes after the RIFF's end go too.
 */
export function stripWebpMetadata(input: Uint8Array): FilteredImage {
  if (input.length < 20 || fourCc(input, 0) !== 'RIFF' || fourCc(input, 8) !== 'WEBP') throw new MalformedImageError('The file does not start like a WebP');
  const view = new DataView(input.buffer, input.byteOffset, input.byteLength);
  const riffEnd = 8 + view.getUint32(4, true);
  if (riffEnd > input.length) throw new MalformedImageError('The WebP ends before its RIFF size says');
  const kept: Uint8Array[] = [];
  let changed = riffEnd < input.length;
  let orientation: number | null = null;
  let animated = false;
  let lossless = false;
  let pos = 12;
  while (pos < riffEnd) {
    if (pos + 8 > riffEnd) throw new MalformedImageError('The WebP ends inside a chunk header');
    const type = fourCc(input, pos);
    if (pos === 12 && !FIRST_CHUNKS.has(type)) throw new MalformedImageError(`The WebP starts with a ${JSON.stringify(type)} chunk`);
    const size = view.getUint32(pos + 4, true);
    const dataEnd = pos + 8 + size;
    if (dataEnd > riffEnd) throw new MalformedImageError('The WebP ends inside a chunk');
    // Chunks are padded to an even size; a last odd chunk without its pad byte gets one.
    const end = Math.min(dataEnd + (size & 1), riffEnd);
    const padMissing = (size & 1) === 1 && end === dataEnd;
    if (KEPT_CHUNKS.has(type)) {
      if (type === 'VP8X') {
        if (size < 10) throw new MalformedImageError('The WebP has a VP8X chunk too short');
        const flags = input[pos + 8]!;
        if (flags & ANIMATION_FLAG) animated = true;
        if (flags & (EXIF_FLAG | XMP_FLAG)) {
          const chunk = input.slice(pos, end);
          chunk[8] = flags & ~(EXIF_FLAG | XMP_FLAG);
          kept.push(chunk);
          changed = true;
        } else {
          kept.push(input.subarray(pos, end));
        }
      } else {
        kept.push(input.subarray(pos, end));
      }
      if (type === 'ANIM') animated = true;
      if (type === 'VP8L') lossless = true;
      if (padMissing) {
        kept.push(new Uint8Array(1));
        changed = true;
      }
    } else {
      if (type === 'EXIF' && orientation === null) orientation = exifOrientation(input.subarray(pos + 8, dataEnd));
      changed = true;
    }
    pos = end;
  }
  if (!changed) return { data: input, changed, orientation, animated, lossless };
  const body = joinParts(kept);
  const header = new Uint8Array(12);
  header.set(input.subarray(0, 12));
  new DataView(header.buffer).setUint32(4, 4 + body.length, true);
  return { data: joinParts([header, body]), changed, orientation, animated, lossless };
}
