import type { StripMetadataTask, StripMetadataTaskResult } from '../../pool/media-task-types.ts';
import { loadSharp } from '../../previews/thumbnail-image.ts';
import { hashContent, type XxHashApi } from '../hashing/content-hash.ts';
import { filterImageMetadata } from './image-filter.ts';
import { MalformedImageError, type FilteredImage } from './filtered-image.ts';

/** JPEG quality of an image re-encoded to turn it upright: visually lossless, and no larger than most cameras' own. */
export const REENCODED_JPEG_QUALITY = 90;
/** The same for a lossy WebP. */
export const REENCODED_WEBP_QUALITY = 90;

/** An ArrayBuffer of its own holding `data` (a view of a larger or native buffer cannot be transferred). */
function ownBuffer(data: Uint8Array): ArrayBuffer {
  const own = new Uint8Array(data.byteLength);
  own.set(data);
  return own.buffer;
}

function refused(reason: string): StripMetadataTaskResult {
  return { kind: 'stripMetadata', outcome: 'refused', reason: reason.slice(0, 200) };
}

/**
 * In a worker thread: the image without its EXIF, XMP, IPTC and comments. An image whose EXIF
 * Orientation is 1 or absent keeps its pixels byte for byte: only the metadata segments (JPEG) or
 * chunks (PNG, WebP) are left out. One with another orientation is turned upright with sharp and
 * re-encoded in its own format (JPEG at quality 90, PNG and lossless WebP losslessly), keeping its
 * ICC profile; then the filter runs on sharp's output too. An animated image with an orientation
 * other than 1 is refused: its frames cannot be turned here.
 */
export async function stripImageMetadata(task: StripMetadataTask, xxhash: XxHashApi): Promise<StripMetadataTaskResult> {
  const input = new Uint8Array(task.image);
  let filtered: FilteredImage;
  try {
    filtered = filterImageMetadata(task.contentType, input);
  } catch (error) {
    if (error instanceof MalformedImageError) return refused(error.message);
    throw error;
  }
  const upright = filtered.orientation === null || filtered.orientation === 1;
  if (upright) {
    if (!filtered.changed) return { kind: 'stripMetadata', outcome: 'unchanged' };
    return { kind: 'stripMetadata', outcome: 'stripped', data: ownBuffer(filtered.data), hash: hashContent(xxhash, filtered.data), reencoded: false };
  }
  if (filtered.animated) return refused('An animated image with an EXIF orientation other than 1 cannot be turned upright');
  const sharp = await loadSharp();
  let encoded: Uint8Array;
  try {
    const image = sharp(input, { limitInputPixels: task.maxPixels, failOn: 'error' }).autoOrient().keepIccProfile();
    const output =
      task.contentType === 'image/jpeg' ? image.jpeg({ quality: REENCODED_JPEG_QUALITY, mozjpeg: false })
      : task.contentType === 'image/png' ? image.png()
      : image.webp(filtered.lossless ? { lossless: true } : { quality: REENCODED_WEBP_QUALITY });
    encoded = await output.toBuffer();
  } catch (error) {
    return refused(`The image cannot be decoded: ${(error as Error).message}`);
  }
  // sharp writes no EXIF, XMP or IPTC unless told to; the filter vouches for it all the same.
  const data = filterImageMetadata(task.contentType, encoded).data;
  return { kind: 'stripMetadata', outcome: 'stripped', data: ownBuffer(data), hash: hashContent(xxhash, data), reencoded: true };
}
