import { TUS_RESUMABLE, TUS_VERSION } from '@tus/utils';
import type { Authenticator } from '../../../auth/authenticator.ts';
import type { Principal } from '../../../auth/principal.ts';
import { fingerprintOf } from '../../../uploads/idempotency/idempotency-key.ts';
import type { TusUploadRow } from '../../../uploads/tus/tus-upload.repository.ts';
import { badRequest, notFound, tusVersionUnsupported, unsupportedMediaType } from '../../../errors/errors.ts';
import { isUuid } from '../../../domain/validation.ts';
import { ServiceError } from '../../../errors/service-error.ts';
import type { AdmissionGate } from '../../../uploads/admission/admission-gate.ts';
import type { RequestRateLimiter } from '../../../limits/rate-limiter.ts';
import { appendAdmitted } from '../../../uploads/tus/admitted-append.ts';
import type { TusPatchResult, TusService } from '../../../uploads/tus/tus-service.ts';
import { uploadAccess } from '../../../uploads/upload-access.ts';
import { authorizeMedia } from '../../guards.ts';
import { runIdempotent, type IdempotentRouteDeps } from '../../../uploads/idempotency/run-idempotent.ts';
import type { HttpRequest, HttpResult, Route } from '../../types.ts';

export interface TusRouteDeps extends IdempotentRouteDeps {
  authenticator: Authenticator;
  rateLimiter: RequestRateLimiter;
  gate: AdmissionGate;
  tus: TusService;
}

export const TUS_PATH = '/v1/cdn/media/:teamId/tus';
const CREATE_ROUTE = `POST ${TUS_PATH}`;
/** What a replayed creation answers again besides its status (Tus-Resumable is on every answer anyway). */
const CREATION_KEPT_HEADERS = ['Location', 'Upload-Expires', 'Upload-Offset', 'Media-Id', 'Tus-Resumable'];
export const TUS_UPLOAD_PATH = '/v1/cdn/media/:teamId/tus/:uploadId';
/** The extensions this server speaks (tus 1.0.0). */
export const TUS_EXTENSIONS = 'creation,creation-with-upload,termination,expiration';
export const TUS_CONTENT_TYPE = 'application/offset+octet-stream';

const SUPPORTED_VERSIONS = TUS_VERSION.join(',');

/** A tus length or offset header: a non-negative integer. */
function integerHeader(request: HttpRequest, name: string): number {
  const value = request.headers[name.toLowerCase()];
  if (value === undefined) throw badRequest(`${name} is required`, name);
  if (!/^\d{1,15}$/.test(value.trim())) throw badRequest(`${name} must be a non-negative integer`, name);
  return Number(value.trim());
}

function checkTusResumable(request: HttpRequest): void {
  if (request.headers['tus-resumable'] !== TUS_RESUMABLE) throw tusVersionUnsupported(SUPPORTED_VERSIONS);
}

function hasBody(request: HttpRequest): boolean {
  return request.body.declaredLength === null ? request.headers['transfer-encoding'] !== undefined : request.body.declaredLength > 0;
}

function checkPatchContentType(request: HttpRequest): void {
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== TUS_CONTENT_TYPE) throw unsupportedMediaType(`The body must be ${TUS_CONTENT_TYPE}`, request.headers['content-type'] ?? '');
}

/** The upload id of the path; anything but an id is no upload of ours (404). */
function uploadIdOf(request: HttpRequest): string {
  const id = request.params['uploadId'] ?? '';
  if (!isUuid(id)) throw notFound('upload', id);
  return id;
}

function uploadLocation(teamId: string, id: string): string {
  return `/v1/cdn/media/${encodeURIComponent(teamId)}/tus/${id}`;
}

/** The headers that tell a client where an upload stands. */
function progressHeaders(result: TusPatchResult): Record<string, string> {
  const headers: Record<string, string> = { 'Upload-Offset': String(result.offset) };
  if (result.mediaId) headers['Media-Id'] = result.mediaId;
  if (result.expiresAt) headers['Upload-Expires'] = result.expiresAt.toUTCString();
  return headers;
}

/**
 * Resumable uploads, tus 1.0.0 (creation, creation-with-upload, termination, expiration). The
 * protocol is small and our HTTP layer is uWebSockets.js, so the handlers are our own; the
 * protocol pieces (Upload-Metadata, version constants) come from @tus/utils. Every answer, errors
 * included, carries Tus-Resumable; errors have the API's error body.
 */
export function tusRoutes(deps: TusRouteDeps): Route[] {
  const { tus } = deps;

  /** Authenticates (as the upload routes), checks Tus-Resumable, and adds Tus-Resumable to the answer or the error. */
  function tusHandler(handle: (request: HttpRequest, principal: Principal, rateHeaders: Record<string, string>) => Promise<HttpResult>) {
    return async (request: HttpRequest): Promise<HttpResult> => {
      try {
        const { principal, headers } = await authorizeMedia(request, deps, uploadAccess);
        checkTusResumable(request);
        const result = await handle(request, principal, headers);
        return { ...result, headers: { 'Tus-Resumable': TUS_RESUMABLE, ...headers, ...result.headers } };
      } catch (error) {
        if (error instanceof ServiceError) error.headers['Tus-Resumable'] = TUS_RESUMABLE;
        throw error;
      }
    };
  }

  const append = (request: HttpRequest, teamId: string, id: string, offset: number): Promise<TusPatchResult> =>
    appendAdmitted(deps, teamId, id, offset, request.body, request.signal);

  return [
    {
      method: 'OPTIONS',
      pattern: TUS_PATH,
      // Discovery needs no key (it says nothing about the team). A CORS preflight (Origin and
      // Access-Control-Request-Method) never gets here: src/http/cors.ts answers it.
      handler: () => ({
        status: 204,
        headers: {
          'Tus-Resumable': TUS_RESUMABLE,
          'Tus-Version': SUPPORTED_VERSIONS,
          'Tus-Extension': TUS_EXTENSIONS,
          'Tus-Max-Size': String(tus.maxSize),
        },
      }),
    },
    {
      method: 'POST',
      pattern: TUS_PATH,
      handler: tusHandler(async (request, principal, rateHeaders) => {
        if (request.headers['upload-defer-length'] !== undefined) throw badRequest('Upload-Defer-Length is not supported: send Upload-Length', 'Upload-Defer-Length');
        if (request.headers['upload-concat'] !== undefined) throw badRequest('Upload-Concat is not supported', 'Upload-Concat');
        const length = integerHeader(request, 'Upload-Length');
        const metadata = request.headers['upload-metadata'];
        const withUpload = hasBody(request);
        if (withUpload) checkPatchContentType(request);
        // With an Idempotency-Key a retried creation answers the first one's Location: one upload, one reservation.
        const what = { teamId: principal.teamId, route: CREATE_ROUTE, fingerprint: creationFingerprint(length, metadata), keptHeaders: CREATION_KEPT_HEADERS, headers: rateHeaders };
        return runIdempotent(deps, request, what, async () => {
          const row = await tus.create(principal, { length, metadata });
          const headers: Record<string, string> = {
            'Tus-Resumable': TUS_RESUMABLE,
            Location: uploadLocation(principal.teamId, row.id),
            'Upload-Expires': row.expiresAt.toUTCString(),
          };
          // An empty file is complete as soon as it exists (tus clients send no PATCH for it): it becomes its media file here.
          if (withUpload || length === 0) Object.assign(headers, progressHeaders(await append(request, principal.teamId, row.id, 0)));
          return { status: 201, headers };
        });
      }),
    },
    {
      method: 'HEAD',
      pattern: TUS_UPLOAD_PATH,
      handler: tusHandler(async (request, principal) => ({ status: 200, headers: headHeaders(await tus.status(principal.teamId, uploadIdOf(request))) })),
    },
    {
      method: 'PATCH',
      pattern: TUS_UPLOAD_PATH,
      handler: tusHandler(async (request, principal) => {
        checkPatchContentType(request);
        const offset = integerHeader(request, 'Upload-Offset');
        const result = await append(request, principal.teamId, uploadIdOf(request), offset);
        return { status: 204, headers: progressHeaders(result) };
      }),
    },
    {
      method: 'DELETE',
      pattern: TUS_UPLOAD_PATH,
      handler: tusHandler(async (request, principal) => {
        await tus.terminate(principal.teamId, uploadIdOf(request));
        return { status: 204 };
      }),
    },
  ];
}

/**
 * What a creation asks for: its length and its metadata (pairs in any order are the same request).
 * Not the bytes of a creation-with-upload: they are only the first part of the upload, whose
 * offset the replay answers; the client goes on from that offset with PATCH, whose Upload-Offset
 * check keeps every byte stored once. A retry may so send another first chunk (or none) and still
 * be the same creation, and its body is never read for a comparison.
 */
function creationFingerprint(length: number, metadata: string | undefined): string {
  const pairs = (metadata ?? '').split(',').map((pair) => pair.trim()).filter((pair) => pair !== '').sort();
  return fingerprintOf({ length, metadata: pairs });
}

function headHeaders(row: TusUploadRow): Record<string, string> {
  const headers: Record<string, string> = {
    'Upload-Offset': String(row.offset),
    'Upload-Length': String(row.length),
    'Cache-Control': 'no-store',
  };
  if (row.metadata !== '') headers['Upload-Metadata'] = row.metadata;
  if (row.completedAt) headers['Media-Id'] = row.id;
  else headers['Upload-Expires'] = row.expiresAt.toUTCString();
  return headers;
}
