import type { MikroORM } from '@mikro-orm/postgresql';
import type { Authenticator } from '../../../auth/authenticator.ts';
import type { DeletionLinks } from '../../../domain/media/deletion-links.ts';
import type { RequestRateLimiter } from '../../../limits/rate-limiter.ts';
import type { UploadCommitter } from '../../../uploads/commit/upload-commit.ts';
import { patternOf } from '../../../uploads/idempotency/run-idempotent.ts';
import { parseDeletionUrlOption, parseMultipartOptions } from '../../../uploads/options/upload-options.ts';
import { JsonUploadParser, requireJsonContentType } from '../../../uploads/parsers/json-upload-parser.ts';
import { MultipartParser, multipartBoundary } from '../../../uploads/parsers/multipart-parser.ts';
import { mediaTarget } from '../../../uploads/targets/media-upload-target.ts';
import { uploadAccess } from '../../../uploads/upload-access.ts';
import { UploadUseCase, type UploadUseCaseDeps } from '../../../uploads/upload-use-case.ts';
import { authorizeMedia } from '../../guards.ts';
import { uploadAnswer } from '../../upload-answer.ts';
import type { HttpResult, Route } from '../../types.ts';

export interface UploadRouteDeps extends UploadUseCaseDeps {
  authenticator: Authenticator;
  rateLimiter: RequestRateLimiter;
  orm: MikroORM;
  mediaCommitter: UploadCommitter;
}

const MULTIPART_ROUTE = 'POST /v1/cdn/media/:teamId/upload/file';
const JSON_ROUTE = 'POST /v1/cdn/media/:teamId/upload';

/**
 * The two upload routes of spec 4.2 and 4.3. Everything decidable from the
 * headers is decided before the admission gate; while an upload waits for a
 * slot its socket stays paused and no body byte is read.
 */
export function uploadRoutes(deps: UploadRouteDeps & { deletionLinks: DeletionLinks }): Route[] {
  const uploads = new UploadUseCase(deps);
  /** A 201 answer with the file's deletion link added, when the request asked for one (`deletionUrl=true`). */
  const answer = (result: HttpResult, teamId: string, asked: boolean): HttpResult => {
    if (!asked || result.status !== 201 || typeof result.body !== 'object' || result.body === null) return result;
    const file = result.body as { id: string };
    return { ...result, body: { ...file, deletionUrl: deps.deletionLinks.url(teamId, file.id) } };
  };
  return [
    {
      method: 'POST',
      pattern: patternOf(MULTIPART_ROUTE),
      handler: async (request) => {
        const { principal, headers } = await authorizeMedia(request, deps, uploadAccess);
        const boundary = multipartBoundary(request.headers['content-type'] ?? '');
        const options = parseMultipartOptions(request.query);
        const deletionUrl = parseDeletionUrlOption(request.query);
        const result = await uploads.receive({
          kind: 'multipart', principal, target: mediaTarget(deps, principal, 'multipart', options), body: request.body, clientGone: request.signal,
          idempotency: { route: MULTIPART_ROUTE, key: request.headers['idempotency-key'], options },
          createParser: (events) => new MultipartParser(boundary, events),
        });
        return answer(uploadAnswer(result, headers), principal.teamId, deletionUrl);
      },
    },
    {
      method: 'POST',
      pattern: patternOf(JSON_ROUTE),
      handler: async (request) => {
        const { principal, headers } = await authorizeMedia(request, deps, uploadAccess);
        requireJsonContentType(request.headers['content-type']);
        const deletionUrl = parseDeletionUrlOption(request.query);
        const result = await uploads.receive({
          kind: 'json', principal, target: mediaTarget(deps, principal, 'json', null), body: request.body, clientGone: request.signal,
          idempotency: { route: JSON_ROUTE, key: request.headers['idempotency-key'], options: null },
          createParser: (events) => new JsonUploadParser(events),
        });
        return answer(uploadAnswer(result, headers), principal.teamId, deletionUrl);
      },
    },
  ];
}
