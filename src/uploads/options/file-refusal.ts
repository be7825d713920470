import { unsupportedMediaType } from '../../errors/errors.ts';
import { ServiceError } from '../../errors/service-error.ts';
import { checkNameAndType } from '../../domain/file-types.ts';
import type { FileStart } from '../parsers/body-parser.ts';
import { parseFileName } from '../../domain/file-names.ts';
import type { UploadOptions } from './upload-options.ts';

/**
 * What can be refused as soon as a file starts, before any of its bytes is stored: a name that is
 * not valid (400) or a blocked extension or declared type (415). The name is the query's
 * `fileName` (multipart route), else the one the file came with (the part's filename, or the JSON
 * `fileName` member when it came before `file`); without one, only the declared type is checked.
 * The commit checks the final name again (a JSON `fileName` after `file`, for instance).
 */
export function refusalAtFileStart(options: Pick<UploadOptions, 'fileName'> | null, file: FileStart): ServiceError | null {
  let name = options?.fileName ?? null;
  try {
    if (name === null && file.fileName) name = parseFileName(file.fileName, file.fieldName === null ? 'fileName' : 'file name');
  } catch (error) {
    if (error instanceof ServiceError) return error;
    throw error;
  }
  const blocked = checkNameAndType(name ?? '', file.declaredType);
  return blocked ? unsupportedMediaType(`Blocked file type: ${blocked}`, blocked) : null;
}
