import { z } from 'zod';
import { badRequest, missingArgument } from '../../errors/errors.ts';
import { MAX_FILE_NAME_LENGTH, parseFileName, parseFolderPath } from '../../domain/file-names.ts';
import { MAX_FOLDER_DEPTH } from '../../domain/folders/media-folder.entity.ts';
import { MAX_TAGS, parseTags, TAG_PATTERN } from '../../domain/tags.ts';
import { isUuid } from '../../domain/validation.ts';

/** Upload options after validation; the same for both routes. */
export interface UploadOptions {
  /** Explicit visibility; null lets the folder default or the route default decide. */
  public: boolean | null;
  fileName: string | null;
  /** Folder path segments to find or create, e.g. ['screenshots', '2024']. */
  folderPath: string[] | null;
  folderId: string | null;
  tags: string[];
  /** Strip the EXIF, XMP and IPTC of a JPEG, PNG or WebP image; null lets the team's setting decide. */
  stripMetadata: boolean | null;
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
  const stripMetadata = query.get('stripMetadata');
  const options: UploadOptions = {
    public: publicValue === null ? null : parseBooleanQuery(publicValue),
    fileName: fileName === null ? null : parseFileName(fileName),
    folderPath: folder === null ? null : parseFolderPath(folder),
    folderId: folderId === null ? null : parseFolderId(folderId),
    tags: parseTags(query.get('tags') ?? undefined),
    stripMetadata: stripMetadata === null ? null : parseBooleanQuery(stripMetadata, 'stripMetadata'),
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
  if (fields.stripMetadata !== undefined && fields.stripMetadata !== null && typeof fields.stripMetadata !== 'boolean') {
    throw badRequest('stripMetadata must be true or false', 'stripMetadata');
  }
  const options = {
    public: typeof fields.public === 'boolean' ? fields.public : null,
    fileName: fields.fileName === undefined || fields.fileName === null ? null : parseFileName(fields.fileName),
    folderPath: fields.folder === undefined || fields.folder === null ? null : parseFolderPath(fields.folder),
    folderId: fields.folderId === undefined || fields.folderId === null ? null : parseFolderId(fields.folderId),
    tags: parseTags(fields.tags),
    stripMetadata: typeof fields.stripMetadata === 'boolean' ? fields.stripMetadata : null,
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
  stripMetadata: z.boolean().meta({
    description:
      'Remove the EXIF (with GPS), XMP and IPTC of a JPEG, PNG or WebP image before it is stored, turning it upright by its EXIF orientation first; ' +
      'size, hash and counted storage are the stripped file\'s. Without it the team\'s stripMetadata setting decides. Other types are stored as sent.',
  }),
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
