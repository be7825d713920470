/** An image with its metadata segments or chunks left out, its pixels untouched. */
export interface FilteredImage {
  /** The image without metadata; the input itself when there was none. */
  data: Uint8Array;
  /** Whether anything was left out (metadata, or bytes after the image's end). */
  changed: boolean;
  /** The EXIF Orientation that was left out (1-8), null when there was none. */
  orientation: number | null;
  /** More than one frame (APNG, animated WebP). */
  animated: boolean;
  /** WebP only: the image is lossless (VP8L). */
  lossless: boolean;
}

/** The image's structure cannot be followed (truncated, damaged, not the format it claims): it is refused. */
export class MalformedImageError extends Error {
  override name = 'MalformedImageError';
}

/** The parts concatenated into one buffer of its own. */
export function joinParts(parts: Uint8Array[]): Uint8Array {
  const total = parts.reduce((sum, part) => sum + part.length, 0);
  const joined = new Uint8Array(total);
  let offset = 0;
  for (const part of parts) {
    joined.set(part, offset);
    offset += part.length;
  }
  return joined;
}
