import type { MikroORM } from '@mikro-orm/postgresql';
import type { DeletionLinks } from '../../../domain/media/deletion-links.ts';
import type { UploadCommitter } from '../../../uploads/commit/upload-commit.ts';
import { parseDeletionUrlOption, parseMultipartOptions } from '../../../uploads/options/upload-options.ts';
import { JsonUploadParser, requireJsonContentType } from '../../../uploads/parsers/json-upload-parser.ts';
import { MultipartParser, multipartBoundary } from '../../../uploads/parsers/multipart-parser.ts';
import { mediaTarget } from '../../../uploads/targets/media-upload-target.ts';
import { uploadAccess } from '../../../uploads/upload-access.ts';
import type { UploadUseCase } from '../../../uploads/upload-use-case.ts';
import { uploadAnswer } from '../../upload-answer.ts';
import type { HttpResult, Route } from '../../types.ts';
import { MEDIA_BASE, teamCaller, teamRouteBuilder, type TeamRouteDeps } from '../route-builder.ts';

export interface UploadRouteDeps extends TeamRouteDeps {
  uploadUseCase: UploadUseCase;
  orm: MikroORM;
  mediaCommitter: UploadCommitter;
  deletionLinks: DeletionLinks;
}

const MULTIPART_PATH = '/upload/file';
const JSON_PATH = '/upload';
/** The routes as their Idempotency-Keys name them. */
const MULTIPART_ROUTE = `POST ${MEDIA_BASE}${MULTIPART_PATH}`;
const JSON_ROUTE = `POST ${MEDIA_BASE}${JSON_PATH}`;

/**
 * The two upload routes of spec 4.2 and 4.3. Everything decidable from the
 * headers is decided before the admission gate; while an upload waits for a
 * slot its socket stays paused and no body byte is read.
 */
export function uploadRoutes(deps: UploadRouteDeps): Route[] {
  const uploads = deps.uploadUseCase;
  // The body is the upload's, streamed by the use case: the builder reads no JSON body.
  const route = teamRouteBuilder(deps, 0, MEDIA_BASE);
  const uploader = teamCaller(deps, uploadAccess);
  /** A 201 answer with the file's deletion link added, when the request asked for one (`deletionUrl=true`). */
  const answer = (result: HttpResult, teamId: string, asked: boolean): HttpResult => {
    if (!asked || result.status !== 201 || typeof result.body !== 'object' || result.body === null) return result;
    const file = result.body as { id: string };
    return { ...result, body: { ...file, deletionUrl: deps.deletionLinks.url(teamId, file.id) } };
  };
  return [
    route('POST', MULTIPART_PATH, uploader, async ({ request, principal }) => {
      const boundary = multipartBoundary(request.headers['content-type'] ?? '');
      const options = parseMultipartOptions(request.query);
      const deletionUrl = parseDeletionUrlOption(request.query);
      const result = await uploads.receive({
        kind: 'multipart', principal, target: mediaTarget(deps, principal, 'multipart', options), body: request.body, clientGone: request.signal,
        idempotency: { route: MULTIPART_ROUTE, key: request.headers['idempotency-key'], options },
        createParser: (events) => new MultipartParser(boundary, events),
      });
      return answer(uploadAnswer(result, {}), principal.teamId, deletionUrl);
    }),
    route('POST', JSON_PATH, uploader, async ({ request, principal }) => {
      requireJsonContentType(request.headers['content-type']);
      const deletionUrl = parseDeletionUrlOption(request.query);
      const result = await uploads.receive({
        kind: 'json', principal, target: mediaTarget(deps, principal, 'json', null), body: request.body, clientGone: request.signal,
        idempotency: { route: JSON_ROUTE, key: request.headers['idempotency-key'], options: null },
        createParser: (events) => new JsonUploadParser(events),
      });
      return answer(uploadAnswer(result, {}), principal.teamId, deletionUrl);
    }),
  ];
}
