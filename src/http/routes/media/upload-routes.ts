import type { MikroORM } from '@mikro-orm/postgresql';
import type { ApiKeyAuthenticator } from '../../../auth/api-key-authenticator.ts';
import { Permission, Scope } from '../../../auth/permissions.ts';
import type { Principal } from '../../../auth/principal.ts';
import type { UploadCommitter } from '../../../domain/uploads/upload-commit.ts';
import { badRequest } from '../../../errors/errors.ts';
import { ServiceError } from '../../../errors/service-error.ts';
import type { AdmissionGate } from '../../../limits/admission-gate.ts';
import type { RequestRateLimiter } from '../../../limits/rate-limiter.ts';
import type { Metrics, UploadOutcome } from '../../../observability/metrics.ts';
import { StorageError } from '../../../storage/object-store.ts';
import { JsonUploadParser } from '../../../upload/parsers/json-upload-parser.ts';
import { MultipartParser, multipartBoundary } from '../../../upload/parsers/multipart-parser.ts';
import { parseMultipartOptions, type UploadOptions } from '../../../upload/upload-options.ts';
import type { PreparedUpload, UploadRoute, UploadService } from '../../../upload/upload-service.ts';
import type { CommittedUpload } from '../../../upload/upload-target.ts';
import { MediaUploadTarget } from '../../../upload/media-upload-target.ts';
import type { BodyParser, BodyParserEvents } from '../../../upload/parsers/body-parser.ts';
import { authorizeMedia } from '../../guards.ts';
import { ClientAbortedError } from '../../request-body.ts';
import { json, type HttpRequest, type HttpResult, type Route } from '../../types.ts';

export interface UploadRouteDeps {
  authenticator: ApiKeyAuthenticator;
  rateLimiter: RequestRateLimiter;
  gate: AdmissionGate;
  uploads: UploadService;
  metrics: Metrics;
  orm: MikroORM;
  mediaCommitter: UploadCommitter;
}

/** What streaming one upload needs: the admission gate, the upload core and the metrics. */
export type StreamUploadDeps = Pick<UploadRouteDeps, 'gate' | 'uploads' | 'metrics'>;

/**
 * Runs one upload of any kind once its route has authorized it: prepares it (refusals from the
 * headers), waits for an admission slot with the socket paused, streams it, answers 201 with
 * `rateHeaders`, and records its metrics.
 */
export async function streamUpload<Result extends CommittedUpload>(
  deps: StreamUploadDeps,
  request: HttpRequest,
  prepare: () => Promise<PreparedUpload<Result>>,
  createParser: (events: BodyParserEvents) => BodyParser,
  rateHeaders: Record<string, string>,
): Promise<HttpResult> {
  const prepared = await prepare();
  const release = await deps.gate.admit(prepared.principal.teamId, request.signal);
  const started = performance.now();
  let outcome: UploadOutcome = 'failed';
  try {
    const created = await deps.uploads.run({ prepared, body: request.body, createParser, clientGone: request.signal });
    outcome = 'created';
    return json(201, created, rateHeaders);
  } catch (error) {
    outcome = outcomeOf(error, request);
    const storageError = storageErrorOf(error);
    if (storageError) deps.metrics.storageWriterErrors.inc({ code: storageError.code });
    throw error;
  } finally {
    release();
    // Once per upload, not per chunk: the body's byte count is kept by RequestBody anyway.
    deps.metrics.uploadBytes.inc({ route: prepared.route }, request.body.bytesReceived);
    deps.metrics.uploadDuration.observe({ route: prepared.route, outcome }, (performance.now() - started) / 1000);
  }
}

/** Refuses a JSON upload body declared as anything but JSON (400) before any byte is read. */
export function requireJsonBody(request: HttpRequest): void {
  const contentType = request.headers['content-type'];
  if (contentType !== undefined && !/json/i.test(contentType)) {
    throw badRequest('The body must be JSON (application/json)', 'content-type');
  }
}

const uploadAccess = { permission: Permission.mediaUpload, scope: Scope.mediaUpload };

/**
 * The two upload routes of spec 4.2 and 4.3. Everything decidable from the
 * headers is decided before the admission gate; while an upload waits for a
 * slot its socket stays paused and no body byte is read.
 */
export function uploadRoutes(deps: UploadRouteDeps): Route[] {
  const target = (principal: Principal, route: UploadRoute, options: UploadOptions | null) => new MediaUploadTarget({ orm: deps.orm, committer: deps.mediaCommitter }, principal, route, options);
  return [
    {
      method: 'POST',
      pattern: '/v1/cdn/media/:teamId/upload/file',
      handler: async (request) => {
        const { principal, headers } = await authorizeMedia(request, deps, uploadAccess);
        const boundary = multipartBoundary(request.headers['content-type'] ?? '');
        const options = parseMultipartOptions(request.query);
        return streamUpload(
          deps,
          request,
          () => deps.uploads.prepare(principal, 'multipart', request.body.declaredLength, target(principal, 'multipart', options)),
          (events) => new MultipartParser(boundary, events),
          headers,
        );
      },
    },
    {
      method: 'POST',
      pattern: '/v1/cdn/media/:teamId/upload',
      handler: async (request) => {
        const { principal, headers } = await authorizeMedia(request, deps, uploadAccess);
        requireJsonBody(request);
        return streamUpload(
          deps,
          request,
          () => deps.uploads.prepare(principal, 'json', request.body.declaredLength, target(principal, 'json', null)),
          (events) => new JsonUploadParser(events),
          headers,
        );
      },
    },
  ];
}

function outcomeOf(error: unknown, request: HttpRequest): UploadOutcome {
  if (error instanceof ClientAbortedError || request.signal.aborted) return 'aborted';
  return error instanceof ServiceError && error.status < 500 ? 'refused' : 'failed';
}

/** The storage failure behind an upload's error: thrown as is, or the cause of the 503 it became. */
function storageErrorOf(error: unknown): StorageError | null {
  if (error instanceof StorageError) return error;
  if (error instanceof ServiceError && error.cause instanceof StorageError) return error.cause;
  return null;
}
