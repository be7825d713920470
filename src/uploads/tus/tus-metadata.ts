import { Metadata } from '@tus/utils';
import type { TusUploadOptions } from './tus-upload.repository.ts';
import { badRequest, missingArgument } from '../../errors/errors.ts';
import { parseMultipartOptions } from '../options/upload-options.ts';

/** Upload-Metadata keys (tus) and the upload option each one is. */
const OPTION_OF_KEY: Record<string, string> = { filename: 'fileName', folder: 'folder', folderId: 'folderId', tags: 'tags', public: 'public', stripMetadata: 'stripMetadata' };

/**
 * `Upload-Metadata` (comma-separated `key base64value` pairs, parsed by @tus/utils) into the upload
 * options, validated by the multipart route's own parser so that both routes accept and refuse
 * exactly the same values. `filename` is required; `filetype` is the declared type (judged like a
 * multipart part's Content-Type); other keys are ignored, as tus clients add their own.
 */
export function parseTusMetadata(header: string | undefined): TusUploadOptions {
  if (header === undefined || header.trim() === '') throw missingArgument('filename');
  let pairs: Record<string, string | null>;
  try {
    pairs = Metadata.parse(header);
  } catch {
    throw badRequest('Upload-Metadata is invalid: comma-separated pairs of a key and its base64 value', 'Upload-Metadata');
  }
  const query = new URLSearchParams();
  for (const [key, option] of Object.entries(OPTION_OF_KEY)) {
    const value = pairs[key];
    if (value !== undefined) query.set(option, value ?? '');
  }
  const options = parseMultipartOptions(query);
  if (options.fileName === null) throw missingArgument('filename');
  const declared = pairs['filetype']?.trim();
  return {
    fileName: options.fileName,
    declaredType: declared ? declared : null,
    folderPath: options.folderPath,
    folderId: options.folderId,
    tags: options.tags,
    public: options.public,
    stripMetadata: options.stripMetadata,
  };
}
