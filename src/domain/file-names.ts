import { badRequest } from '../errors/errors.ts';
import { MAX_FOLDER_DEPTH } from './folders/media-folder.entity.ts';

export const MAX_FILE_NAME_LENGTH = 255;
// C0/C1 controls, NUL, and the bidirectional overrides that can disguise an extension.
const UNSAFE_NAME_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
// A UTF-16 surrogate without its pair (a valid JSON escape such as "\ud800") is not text: PostgreSQL
// would store U+FFFD in its place, and the upload event's jsonb payload refuses it (a 500 before).
const UNPAIRED_SURROGATE = /\p{Cs}/u;

/** A file name to store: the last path segment, without controls, 1-255 characters. */
export function parseFileName(value: unknown, field = 'fileName'): string {
  if (typeof value !== 'string') throw badRequest(`${field} must be a string`, field);
  const name = value.split(/[\\/]/).pop()!.trim();
  if (name.length === 0 || name === '.' || name === '..') throw badRequest(`${field} must not be empty`, field);
  if (name.length > MAX_FILE_NAME_LENGTH) throw badRequest(`${field} is longer than ${MAX_FILE_NAME_LENGTH} characters`, field);
  if (UNSAFE_NAME_CHARACTERS.test(name)) throw badRequest(`${field} contains control characters`, field);
  if (UNPAIRED_SURROGATE.test(name)) throw badRequest(`${field} is not valid Unicode text`, field);
  return name;
}

/** `a/b/c` into segments; at most 5 levels of 1-100 characters each. */
export function parseFolderPath(value: unknown): string[] {
  if (typeof value !== 'string') throw badRequest('folder must be a string', 'folder');
  const segments = value.replace(/^\/+|\/+$/g, '').split('/').map((segment) => segment.trim());
  if (segments.some((segment) => segment.length === 0)) throw badRequest('folder has an empty path segment', 'folder');
  if (segments.length > MAX_FOLDER_DEPTH) throw badRequest(`Folders nest at most ${MAX_FOLDER_DEPTH} levels`, 'folder');
  for (const segment of segments) {
    if (segment.length > 100) throw badRequest('A folder name is at most 100 characters', 'folder');
    if (UNSAFE_NAME_CHARACTERS.test(segment) || UNPAIRED_SURROGATE.test(segment) || segment === '.' || segment === '..') {
      throw badRequest('folder contains an invalid name', 'folder');
    }
  }
  return segments;
}
