import { badRequest } from '../../errors/errors.ts';

export const MAX_SLUG_LENGTH = 64;

/**
 * The slug of a team tag's name: accents dropped, lower case, every run of other characters one
 * dash, no dash at either end (`Ärger im Büro!` → `arger-im-buro`). A name with no letter or digit
 * has none: 400.
 */
export function tagSlug(name: string): string {
  const slug = name.normalize('NFKD').replace(/\p{M}+/gu, '').toLowerCase()
    .replace(/[^a-z0-9]+/g, '-').slice(0, MAX_SLUG_LENGTH).replace(/^-+|-+$/g, '');
  if (!slug) throw badRequest('Invalid name: it needs a letter or digit (a-z, 0-9) for its slug', 'name');
  return slug;
}
