import { z } from 'zod';
import { badRequest, missingArgument } from '../../errors/errors.ts';
import { isUuid } from '../../domain/validation.ts';
import { MAX_FOLDER_DEPTH } from '../../domain/folders/media-folder.entity.ts';

/** Upload options after validation; the same for both routes. */
export interface UploadOptions {
  /** Explicit visibility; null lets the folder default or the route default decide. */
  public: boolean | null;
  fileName: string | null;
  /** Folder path segments to find or create, e.g. ['screenshots', '2024']. */
  folderPath: string[] | null;
  folderId: string | null;
  tags: string[];
}

export const MAX_TAGS = 20;
const TAG_PATTERN = /^[a-z0-9_.:@-]{1,64}$/;
const MAX_FILE_NAME_LENGTH = 255;
// C0/C1 controls, NUL, and the bidirectional overrides that can disguise an extension.
const UNSAFE_NAME_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
// A UTF-16 surrogate without its pair (a valid JSON escape such as "\ud800") is not text: PostgreSQL
// would store U+FFFD in its place, and the upload event's jsonb payload refuses it (a 500 before).
const UNPAIRED_SURROGATE = /\p{Cs}/u;

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

function parseFolderId(value: unknown): string {
  if (typeof value !== 'string' || !isUuid(value)) throw badRequest('folderId must be a folder id', 'folderId');
  return value;
}

function parseBooleanQuery(value: string, name = 'public'): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw badRequest(`${name} must be true or false`, name);
}

/** The upload routes' `deletionUrl` query parameter: true asks for a deletion link in the answer (not an upload option: it changes nothing stored). */
export function parseDeletionUrlOption(query: URLSearchParams): boolean {
  const value = query.get('deletionUrl');
  return value === null ? false : parseBooleanQuery(value, 'deletionUrl');
}

function checkFolderChoice(folderPath: string[] | null, folderId: string | null): void {
  if (folderPath && folderId) throw badRequest('Give either folder or folderId, not both', 'folder');
}

/** Options of the multipart route, from its query string (spec 4.2). */
export function parseMultipartOptions(query: URLSearchParams): UploadOptions {
  const folder = query.get('folder');
  const folderId = query.get('folderId');
  const publicValue = query.get('public');
  const fileName = query.get('fileName');
  const options: UploadOptions = {
    public: publicValue === null ? null : parseBooleanQuery(publicValue),
    fileName: fileName === null ? null : parseFileName(fileName),
    folderPath: folder === null ? null : parseFolderPath(folder),
    folderId: folderId === null ? null : parseFolderId(folderId),
    tags: parseTags(query.get('tags') ?? undefined),
  };
  checkFolderChoice(options.folderPath, options.folderId);
  return options;
}

/** Options of the JSON route, from the fields beside `file` (spec 4.3). */
export function parseJsonOptions(fields: Record<string, unknown>): UploadOptions & { fileName: string } {
  if (fields.fileName === undefined || fields.fileName === null) throw missingArgument('fileName');
  return { ...parseOptionFields(fields), fileName: parseFileName(fields.fileName) };
}

/** The upload options as JSON members, each optional (the JSON route's rules; upload URLs fix them this way too). */
export function parseOptionFields(fields: Record<string, unknown>): UploadOptions {
  if (fields.public !== undefined && fields.public !== null && typeof fields.public !== 'boolean') {
    throw badRequest('public must be true or false', 'public');
  }
  const options = {
    public: typeof fields.public === 'boolean' ? fields.public : null,
    fileName: fields.fileName === undefined || fields.fileName === null ? null : parseFileName(fields.fileName),
    folderPath: fields.folder === undefined || fields.folder === null ? null : parseFolderPath(fields.folder),
    folderId: fields.folderId === undefined || fields.folderId === null ? null : parseFolderId(fields.folderId),
    tags: parseTags(fields.tags),
  };
  checkFolderChoice(options.folderPath, options.folderId);
  return options;
}

/**
 * The upload options as the API description (src/http/openapi) shows them. The parsers above
 * validate (a query string, a streamed JSON body, so no schema library); these schemas are built
 * from the same limits and patterns, and the integration tests check the answers against them.
 */
export const uploadOptionSchemas = {
  public: z.boolean().meta({ description: 'Visibility; without it the target folder\'s defaultPublic decides, else the route\'s default.' }),
  fileName: z
    .string()
    .min(1)
    .max(MAX_FILE_NAME_LENGTH)
    .meta({ description: `Stored file name: the last path segment, trimmed, 1-${MAX_FILE_NAME_LENGTH} characters, no control characters.` }),
  folder: z
    .string()
    .min(1)
    .meta({ description: `Folder name or path such as \`screenshots/2024\` (at most ${MAX_FOLDER_DEPTH} levels of 1-100 characters); missing folders are created. Not with folderId.` }),
  folderId: z.uuid().meta({ description: 'Id of an existing folder of the team. Not with folder.' }),
  tag: z
    .string()
    .regex(TAG_PATTERN)
    .meta({ description: 'A tag: 1-64 characters of a-z 0-9 _ . : @ -.' }),
  tagList: z
    .string()
    .meta({ description: `Comma-separated tags (1-64 characters of a-z 0-9 _ . : @ - each), at most ${MAX_TAGS}.` }),
};
