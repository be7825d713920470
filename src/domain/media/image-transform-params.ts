import { badRequest } from '../../errors/errors.ts';

/**
 * The parameters of a resized image (`?w=&h=&fit=&format=&q=` on a file's link): parsed and
 * bounded here, from the query alone (so a refusal comes before the file is looked up), then
 * resolved against the file's type into the variant that is made, cached and served.
 *
 * Only listed values are accepted, so every file has a bounded number of variants (and each
 * variant a bounded cost): a stranger cannot make the service resize one image into thousands of
 * sizes. docs/api.md, "Resized images", explains the choice.
 */

/** The widths and heights a resized image may have, in pixels. */
export const TRANSFORM_SIDES: readonly number[] = [16, 32, 48, 64, 96, 128, 160, 192, 256, 320, 384, 480, 512, 640, 768, 800, 960, 1024, 1280, 1600, 1920, 2048, 2560];
/** The largest side: also the bound of a conversion without w or h. */
export const MAX_TRANSFORM_SIDE = TRANSFORM_SIDES[TRANSFORM_SIDES.length - 1]!;
export const TRANSFORM_QUALITIES: readonly number[] = [50, 60, 70, 75, 80, 85, 90, 95];
export const DEFAULT_TRANSFORM_QUALITY = 80;
export const TRANSFORM_FITS = ['cover', 'contain', 'inside'] as const;
export const TRANSFORM_FORMATS = ['webp', 'avif', 'jpeg', 'png'] as const;
/** The query parameters that ask for a transform; any one of them does. */
export const TRANSFORM_PARAMETERS = ['w', 'h', 'fit', 'format', 'q'] as const;

export type TransformFit = (typeof TRANSFORM_FITS)[number];
export type TransformFormat = (typeof TRANSFORM_FORMATS)[number];

/** A transform as asked for (absent parameters are null, but for fit, which defaults to inside). */
export interface TransformRequest {
  width: number | null;
  height: number | null;
  fit: TransformFit;
  format: TransformFormat | null;
  quality: number | null;
}

/** A transform as it is made for one file: the output's format and the name of the variant. */
export interface ResolvedTransform {
  width: number | null;
  height: number | null;
  /** inside when only one side (or none) is given: every fit keeps the aspect ratio then. */
  fit: TransformFit;
  format: TransformFormat;
  /** null for PNG (lossless). */
  quality: number | null;
  contentType: string;
  /**
   * The variant's name, unique per output and safe in a storage key and an ETag, e.g.
   * `320x240-cover-q80.webp`, `640xauto-inside.png`; a cache entry is (file, variant).
   */
  variant: string;
}

const SOURCE_FORMATS: Record<string, TransformFormat> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/webp': 'webp',
  'image/avif': 'avif',
  // Only the first frame of a GIF is resized, and a still image is better as a PNG.
  'image/gif': 'png',
};

const CONTENT_TYPES: Record<TransformFormat, string> = { webp: 'image/webp', avif: 'image/avif', jpeg: 'image/jpeg', png: 'image/png' };

/** The sniffed types that can be resized. */
export const TRANSFORM_SOURCE_TYPES: ReadonlySet<string> = new Set(Object.keys(SOURCE_FORMATS));

function single(query: URLSearchParams, name: string): string | null {
  const values = query.getAll(name);
  if (values.length === 0) return null;
  if (values.length > 1) throw badRequest(`Give ${name} once`, name);
  return values[0]!;
}

function side(query: URLSearchParams, name: 'w' | 'h'): number | null {
  const value = single(query, name);
  if (value === null) return null;
  const pixels = /^[1-9]\d{0,4}$/.test(value) ? Number(value) : NaN;
  if (!TRANSFORM_SIDES.includes(pixels)) {
    throw badRequest(`${name} must be one of ${TRANSFORM_SIDES.join(', ')} (pixels)`, value);
  }
  return pixels;
}

function oneOf<T extends string>(query: URLSearchParams, name: string, allowed: readonly T[]): T | null {
  const value = single(query, name);
  if (value === null) return null;
  if (!(allowed as readonly string[]).includes(value)) throw badRequest(`${name} must be one of ${allowed.join(', ')}`, value);
  return value as T;
}

/**
 * The transform a query asks for; null when it names none of w, h, fit, format, q (the file as it
 * is). Other parameters are left alone (expires and signature, a client's cache buster). Throws
 * 400 for a value that is not allowed, or a parameter given twice.
 */
export function parseTransform(query: URLSearchParams): TransformRequest | null {
  if (!TRANSFORM_PARAMETERS.some((name) => query.has(name))) return null;
  const quality = single(query, 'q');
  if (quality !== null && !TRANSFORM_QUALITIES.includes(/^[1-9]\d{0,2}$/.test(quality) ? Number(quality) : NaN)) {
    throw badRequest(`q must be one of ${TRANSFORM_QUALITIES.join(', ')}`, quality);
  }
  return {
    width: side(query, 'w'),
    height: side(query, 'h'),
    fit: oneOf(query, 'fit', TRANSFORM_FITS) ?? 'inside',
    format: oneOf(query, 'format', TRANSFORM_FORMATS),
    quality: quality === null ? null : Number(quality),
  };
}

/**
 * The transform's query in one spelling (fixed order, fit always given): what a signed link of a
 * resized private image signs after the path, and what the link route answers. Two queries with
 * the same meaning (`w=320` and `fit=inside&w=320`) have the same canonical query.
 */
export function canonicalTransformQuery(transform: TransformRequest): string {
  const parts: string[] = [];
  if (transform.width !== null) parts.push(`w=${transform.width}`);
  if (transform.height !== null) parts.push(`h=${transform.height}`);
  parts.push(`fit=${transform.fit}`);
  if (transform.format !== null) parts.push(`format=${transform.format}`);
  if (transform.quality !== null) parts.push(`q=${transform.quality}`);
  return parts.join('&');
}

/** The path a signed link of a transform signs: the file's path and the canonical query. */
export function signedTransformPath(filePath: string, transform: TransformRequest): string {
  return `${filePath}?${canonicalTransformQuery(transform)}`;
}

/** The variant made of a file of `sourceType` (one of TRANSFORM_SOURCE_TYPES); throws 400 for another type. */
export function resolveTransform(transform: TransformRequest, sourceType: string): ResolvedTransform {
  const sourceFormat = SOURCE_FORMATS[sourceType];
  if (!sourceFormat) throw badRequest('Only PNG, JPEG, WebP, GIF and AVIF images can be resized', sourceType);
  const format = transform.format ?? sourceFormat;
  const fit = transform.width !== null && transform.height !== null ? transform.fit : 'inside';
  // PNG is lossless: q makes no other variant.
  const quality = format === 'png' ? null : transform.quality ?? DEFAULT_TRANSFORM_QUALITY;
  const variant = `${transform.width ?? 'auto'}x${transform.height ?? 'auto'}-${fit}${quality === null ? '' : `-q${quality}`}.${format}`;
  return { width: transform.width, height: transform.height, fit, format, quality, contentType: CONTENT_TYPES[format], variant };
}

/** The storage key of a cached variant: under its own prefix, beside the media keys. */
export function transformStorageKey(teamId: string, mediaId: string, variant: string): string {
  return `transforms/${teamId}/${mediaId}/${variant}`;
}

/** The file name of a resized image: the file's, with the output's extension. */
export function transformFileName(fileName: string, format: TransformFormat): string {
  const extension = format === 'jpeg' ? 'jpg' : format;
  return `${fileName.replace(/\.[A-Za-z0-9]{1,10}$/, '')}.${extension}`;
}
