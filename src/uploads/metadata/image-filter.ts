import { stripJpegMetadata } from './jpeg-metadata.ts';
import { stripPngMetadata } from './png-metadata.ts';
import { stripWebpMetadata } from './webp-metadata.ts';
import type { FilteredImage } from './filtered-image.ts';

/** The content types whose metadata an upload can have stripped (as sniffContent() names them). */
export const STRIPPABLE_TYPES = ['image/jpeg', 'image/png', 'image/webp'] as const;
export type StrippableType = (typeof STRIPPABLE_TYPES)[number];

export function isStrippable(contentType: string | null): contentType is StrippableType {
  return (STRIPPABLE_TYPES as readonly (string | null)[]).includes(contentType);
}

/** The image of `contentType` without its EXIF, XMP, IPTC and comments; throws MalformedImageError. */
export function filterImageMetadata(contentType: StrippableType, input: Uint8Array): FilteredImage {
  switch (contentType) {
    case 'image/jpeg':
      return stripJpegMetadata(input);
    case 'image/png':
      return stripPngMetadata(input);
    case 'image/webp':
      return stripWebpMetadata(input);
  }
}
