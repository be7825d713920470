import { badRequest } from '../errors/errors.ts';

export const MAX_TAGS = 20;
export const TAG_PATTERN = /^[a-z0-9_.:@-]{1,64}$/;

/** Spec 2.3: a tag is 1-64 of `a-z 0-9 _ . : @ -`; upper case is invalid, not lower-cased. Duplicates collapse. */
export function parseTags(value: unknown): string[] {
  let tags: unknown[];
  if (value === undefined || value === null || value === '') return [];
  if (typeof value === 'string') tags = value.split(',');
  else if (Array.isArray(value)) tags = value;
  else throw badRequest('tags must be a list of strings', 'tags');
  const normalised = new Set<string>();
  for (const tag of tags) {
    if (typeof tag !== 'string') throw badRequest('tags must be a list of strings', 'tags');
    const candidate = tag.trim();
    if (!TAG_PATTERN.test(candidate)) {
      throw badRequest(`Invalid tag "${tag.slice(0, 80)}": a tag is 1-64 characters of a-z 0-9 _ . : @ - (lower case only)`, 'tags');
    }
    normalised.add(candidate);
  }
  if (normalised.size > MAX_TAGS) throw badRequest(`A file has at most ${MAX_TAGS} tags`, 'tags');
  return [...normalised];
}
