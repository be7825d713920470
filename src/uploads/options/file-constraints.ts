import { z } from 'zod';
import { fileTooLarge, unsupportedMediaType } from '../../errors/errors.ts';
import type { ServiceError } from '../../errors/service-error.ts';

/**
 * Limits a request fixes for its one file beyond the team's (an upload URL's maxSizeBytes and
 * contentTypes): 413 past the size, 415 for a type outside the list. Judged from the headers
 * where they decide it, while streaming, and on the final type at commit.
 */
export interface FileConstraints {
  /** The largest file (413 beyond); null: only the route's and the team's limits. */
  maxFileBytes: number | null;
  /** Allowed types, lower case, `type/subtype` or `type/*`; null: any type the upload policy allows. */
  contentTypes: readonly string[] | null;
}

/** `type/subtype` or `type/*` (RFC 6838 names), compared without case. */
const CONTENT_TYPE_PATTERN = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/(?:\*|[a-z0-9][a-z0-9!#$&^_.+-]{0,126})$/i;
export const MAX_CONTENT_TYPES = 32;

export const contentTypeListSchema = z
  .array(z.string().regex(CONTENT_TYPE_PATTERN, 'must be a type such as image/png or image/*'))
  .min(1)
  .max(MAX_CONTENT_TYPES)
  .meta({ description: `Allowed types of the file, \`type/subtype\` or \`type/*\` (1-${MAX_CONTENT_TYPES}); the file's stored type must match one (415 otherwise).` });

/** The bare type of a Content-Type value (`image/png; x=y` -> `image/png`), lower case; null when there is none. */
export function bareContentType(value: string | null | undefined): string | null {
  if (!value) return null;
  const bare = value.split(';')[0]!.trim().toLowerCase();
  return bare.length > 0 ? bare : null;
}

/** Whether `contentType` (bare or with parameters) matches one of `allowed`. */
export function contentTypeAllowed(allowed: readonly string[], contentType: string): boolean {
  const bare = bareContentType(contentType);
  if (!bare || !bare.includes('/')) return false;
  const major = bare.slice(0, bare.indexOf('/'));
  return allowed.some((entry) => entry === bare || (entry.endsWith('/*') && entry.slice(0, -2) === major));
}

function typeNotAllowed(contentType: string): ServiceError {
  return unsupportedMediaType(`The file's type ${contentType} is not among the allowed contentTypes`, contentType);
}

/**
 * The refusal of a declared type (a raw body's Content-Type, a part's Content-Type) outside the
 * list, or null. `application/octet-stream` declares nothing: the content decides.
 */
export function declaredTypeRefusal(constraints: FileConstraints | null, declaredType: string | null): ServiceError | null {
  const declared = bareContentType(declaredType);
  if (!constraints?.contentTypes || !declared || declared === 'application/octet-stream') return null;
  return contentTypeAllowed(constraints.contentTypes, declared) ? null : typeNotAllowed(declared);
}

/** The refusal of the file's stored type (sniffed, declared or by name) outside the list, or null. */
export function storedTypeRefusal(constraints: FileConstraints | null, contentType: string): ServiceError | null {
  if (!constraints?.contentTypes) return null;
  return contentTypeAllowed(constraints.contentTypes, contentType) ? null : typeNotAllowed(bareContentType(contentType) ?? contentType);
}

/** The 413 of a file of at least `bytes` bytes over the size fixed by the request, or null. */
export function sizeRefusal(constraints: FileConstraints | null, bytes: number): ServiceError | null {
  const max = constraints?.maxFileBytes ?? null;
  return max !== null && bytes > max ? fileTooLarge(max) : null;
}
