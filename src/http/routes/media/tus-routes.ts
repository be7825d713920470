import { TUS_RESUMABLE, TUS_VERSION } from '@tus/utils';
import { isUuid } from '../../../domain/validation.ts';
import { badRequest, notFound, tusVersionUnsupported, unsupportedMediaType } from '../../../errors/errors.ts';
import { ServiceError } from '../../../errors/service-error.ts';
import type { AdmissionGate } from '../../../uploads/admission/admission-gate.ts';
import { fingerprintOf } from '../../../uploads/idempotency/idempotency-key.ts';
import { runIdempotent, type IdempotentRouteDeps } from '../../../uploads/idempotency/run-idempotent.ts';
import { appendAdmitted } from '../../../uploads/tus/admitted-append.ts';
import type { TusUploadRow } from '../../../uploads/tus/tus-upload.repository.ts';
import type { TusPatchResult, TusService } from '../../../uploads/tus/tus-service.ts';
import { uploadAccess } from '../../../uploads/upload-access.ts';
import type { HttpRequest, Route } from '../../types.ts';
import { MEDIA_BASE, publicRouteBuilder, teamCaller, teamRouteBuilder, type RouteHandler, type TeamCaller, type TeamGuard, type TeamRouteDeps } from '../route-builder.ts';

export interface TusRouteDeps extends TeamRouteDeps, IdempotentRouteDeps {
  gate: AdmissionGate;
  tus: TusService;
}

/** The tus paths under MEDIA_BASE. */
const CREATION_PATH = '/tus';
const UPLOAD_PATH = '/tus/:uploadId';
export const TUS_PATH = `${MEDIA_BASE}${CREATION_PATH}`;
const CREATE_ROUTE = `POST ${TUS_PATH}`;
/** What a replayed creation answers again besides its status (Tus-Resumable is on every answer anyway). */
const CREATION_KEPT_HEADERS = ['Location', 'Upload-Expires', 'Upload-Offset', 'Media-Id', 'Tus-Resumable'];
export const TUS_UPLOAD_PATH = `${MEDIA_BASE}${UPLOAD_PATH}`;
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
  // The body is the upload's bytes, appended as they come: the builder reads no JSON body.
  const route = teamRouteBuilder(deps, 0, MEDIA_BASE);
  const uploader = teamCaller(deps, uploadAccess);

  /** Authenticates (as the upload routes), then checks Tus-Resumable; either error carries Tus-Resumable. */
  const tusUploader: TeamGuard = (request) => withTusResumable(async () => {
    const admitted = await uploader(request);
    checkTusResumable(request);
    return admitted;
  });

  /** Adds Tus-Resumable to the answer (the guard's RateLimit headers come after it) or to the error. */
  const tusHandler = (handle: RouteHandler<TeamCaller>): RouteHandler<TeamCaller> => (call) => withTusResumable(async () => {
    const result = await handle(call);
    return { ...result, headers: { 'Tus-Resumable': TUS_RESUMABLE, ...result.headers } };
  });

  const append = (request: HttpRequest, teamId: string, id: string, offset: number): Promise<TusPatchResult> =>
    appendAdmitted(deps, teamId, id, offset, request.body, request.signal);

  return [
    // Discovery needs no key (it says nothing about the team). A CORS preflight (Origin and
    // Access-Control-Request-Method) never gets here: src/http/cors.ts answers it.
    publicRouteBuilder()('OPTIONS', TUS_PATH, () => ({
      status: 204,
      headers: {
        'Tus-Resumable': TUS_RESUMABLE,
        'Tus-Version': SUPPORTED_VERSIONS,
        'Tus-Extension': TUS_EXTENSIONS,
        'Tus-Max-Size': String(tus.maxSize),
      },
    })),
    route('POST', CREATION_PATH, tusUploader, tusHandler(async ({ request, principal }) => {
      if (request.headers['upload-defer-length'] !== undefined) throw badRequest('Upload-Defer-Length is not supported: send Upload-Length', 'Upload-Defer-Length');
      if (request.headers['upload-concat'] !== undefined) throw badRequest('Upload-Concat is not supported', 'Upload-Concat');
      const length = integerHeader(request, 'Upload-Length');
      const metadata = request.headers['upload-metadata'];
      const withUpload = hasBody(request);
      if (withUpload) checkPatchContentType(request);
      // With an Idempotency-Key a retried creation answers the first one's Location: one upload, one reservation.
      const what = { teamId: principal.teamId, route: CREATE_ROUTE, fingerprint: creationFingerprint(length, metadata), keptHeaders: CREATION_KEPT_HEADERS };
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
    })),
    route('HEAD', UPLOAD_PATH, tusUploader, tusHandler(async ({ request, principal }) =>
      ({ status: 200, headers: headHeaders(await tus.status(principal.teamId, uploadIdOf(request))) }))),
    route('PATCH', UPLOAD_PATH, tusUploader, tusHandler(async ({ request, principal }) => {
      checkPatchContentType(request);
      const offset = integerHeader(request, 'Upload-Offset');
      const result = await append(request, principal.teamId, uploadIdOf(request), offset);
      return { status: 204, headers: progressHeaders(result) };
    })),
    route('DELETE', UPLOAD_PATH, tusUploader, tusHandler(async ({ request, principal }) => {
      await tus.terminate(principal.teamId, uploadIdOf(request));
      return { status: 204 };
    })),
  ];
}

/** Every tus answer carries Tus-Resumable, errors included: a refusal gets it on its way out. */
async function withTusResumable<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ServiceError) error.headers['Tus-Resumable'] = TUS_RESUMABLE;
    throw error;
  }
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
