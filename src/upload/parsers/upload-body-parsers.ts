import { badRequest, missingArgument } from '../../errors/errors.ts';
import type { ServiceError } from '../../errors/service-error.ts';
import type { BodyParser, BodyParserEvents } from './body-parser.ts';
import { JsonUploadParser } from './json-upload-parser.ts';
import { MultipartParser } from './multipart-parser.ts';
import { ParseError } from './parse-error.ts';

/** A malformed body is the client's error: 400 with the parser's message. Anything else passes as is. */
function clientError(error: unknown): unknown {
  return error instanceof ParseError ? badRequest(error.message) : error;
}

/** The multipart route's body (spec 4.2): every file part is offered; the options come from the query. */
export function createMultipartBodyParser(contentType: string, events: BodyParserEvents): BodyParser {
  try {
    return new MultipartParser(contentType, {
      fileStart: (info) => events.fileStart({ fieldName: info.fieldName, fileName: info.fileName, declaredType: info.declaredType }),
      fileData: (chunk) => events.fileData(chunk),
      fileEnd: () => events.fileEnd(),
      finish: (_fields, summary) => (summary.hasFile ? events.finish({}) : events.error(noFile())),
      error: (error) => events.error(clientError(error)),
    });
  } catch (error) {
    throw clientError(error);
  }
}

/** The JSON route's body (spec 4.3): `file` streams, the other members come with finish(). */
export function createJsonBodyParser(events: BodyParserEvents): BodyParser {
  return new JsonUploadParser({
    fileStart: (info) => events.fileStart({ fieldName: null, fileName: null, declaredType: info.declaredType }),
    fileData: (chunk) => events.fileData(chunk),
    fileEnd: () => events.fileEnd(),
    finish: (fields, summary) => (summary.hasFile ? events.finish(fields) : events.error(missingArgument('file'))),
    error: (error) => events.error(clientError(error)),
  });
}

function noFile(): ServiceError {
  return badRequest('The form contains no file', 'file');
}
