import { newMediaId } from '../../../domain/media/media-id.ts';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { checkCredential, type FailureThrottle } from '../../../auth/failure-throttle.ts';
import type { Principal } from '../../../auth/principal.ts';
import { makerMayUpload } from '../../../auth/upload-maker.ts';
import type { IdempotencyClaim } from '../../../domain/idempotency/idempotency-keys.ts';
import type { TeamStateCache } from '../../../domain/teams/team-state-cache.ts';
import { parseFileName } from '../../../domain/file-names.ts';
import { badRequest, idempotencyInFlight, uploadUrlRefused } from '../../../errors/errors.ts';
import { ServiceError } from '../../../errors/service-error.ts';
import type { RequestRateLimiter } from '../../../limits/rate-limiter.ts';
import type { UploadCommitter } from '../../../uploads/commit/upload-commit.ts';
import { fingerprintOf } from '../../../uploads/idempotency/idempotency-key.ts';
import { runIdempotent, type IdempotentRouteDeps } from '../../../uploads/idempotency/run-idempotent.ts';
import { declaredTypeRefusal, bareContentType, type FileConstraints } from '../../../uploads/options/file-constraints.ts';
import { refusalAtFileStart } from '../../../uploads/options/file-refusal.ts';
import type { UploadOptions } from '../../../uploads/options/upload-options.ts';
import type { FileStart } from '../../../uploads/parsers/body-parser.ts';
import { MultipartParser, multipartBoundary } from '../../../uploads/parsers/multipart-parser.ts';
import { RawBodyParser } from '../../../uploads/parsers/raw-body-parser.ts';
import { MAX_BODY_BYTES } from '../../../uploads/receive/upload-service.ts';
import { mediaTarget } from '../../../uploads/targets/media-upload-target.ts';
import { storeWithClaimedUrl } from '../../../uploads/upload-urls/claimed-url-store.ts';
import type { CreatedUploadUrl, UploadUrlService } from '../../../uploads/upload-urls/upload-url.service.ts';
import { uploadAccess } from '../../../uploads/upload-access.ts';
import type { UploadUseCase } from '../../../uploads/upload-use-case.ts';
import { ClientAbortedError } from '../../request-body.ts';
import { json, type HttpRequest, type HttpResult, type Route } from '../../types.ts';
import { uploadAnswer } from '../../upload-answer.ts';
import { defineRoute, MEDIA_BASE, teamCaller, teamRouteBuilder, type Guard, type RouteCall, type TeamRouteDeps } from '../route-builder.ts';

export interface UploadUrlRouteDeps extends TeamRouteDeps, IdempotentRouteDeps {
  uploadUseCase: UploadUseCase;
  orm: MikroORM;
  mediaCommitter: UploadCommitter;
  uploadUrls: UploadUrlService;
  teamStates: TeamStateCache;
  /** Failed authentications per client address; an altered URL counts like a wrong key. */
  authFailures: FailureThrottle;
  /** Uses per URL and per team (UPLOAD_URL_*RATE_LIMIT*). */
  uploadUrlLimits: { perUrl: RequestRateLimiter; perTeam: RequestRateLimiter };
  maxJsonBodyBytes: number;
}

const CREATE_PATH = '/upload-urls';
const USE_PATH = '/upload-urls/:urlId';
/** The routes as their Idempotency-Keys name them. */
const CREATE_ROUTE = `POST ${MEDIA_BASE}${CREATE_PATH}`;
const USE_ROUTE = `POST ${MEDIA_BASE}${USE_PATH}`;

/** Who uses an upload URL: whoever holds it, once its signature and the use budgets let the request through. */
interface UrlHolder {
  teamId: string;
  urlId: string;
}

/** Why a use of an upload URL did not store a file: the label of media_upload_urls_refused_total. */
export type UploadUrlRefusalReason =
  | 'invalid' | 'expired' | 'used' | 'in_use' | 'revoked' | 'not_found' | 'rate_limited' | 'bad_request' | 'too_large' | 'team_limit' | 'type' | 'timeout'
  | 'busy' | 'aborted' | 'failed' | 'idempotency';

const REASON_BY_KEY: Record<string, UploadUrlRefusalReason> = {
  'error.media.uploadUrlInvalid': 'invalid',
  'error.media.uploadUrlExpired': 'expired',
  'error.media.uploadUrlUsed': 'used',
  'error.media.uploadUrlInUse': 'in_use',
  'error.media.uploadUrlRevoked': 'revoked',
  // The Idempotency-Key's first use still runs (409) or was another request (422).
  'error.media.idempotencyInFlight': 'idempotency',
  'error.media.idempotencyKeyReused': 'idempotency',
};
const REASON_BY_STATUS: Record<number, UploadUrlRefusalReason> = {
  400: 'bad_request', 402: 'team_limit', 404: 'not_found', 408: 'timeout', 413: 'too_large', 415: 'type', 429: 'rate_limited', 503: 'busy',
};

function refusalReason(error: unknown, request: HttpRequest): UploadUrlRefusalReason {
  if (error instanceof ClientAbortedError || request.signal.aborted) return 'aborted';
  if (!(error instanceof ServiceError)) return 'failed';
  return REASON_BY_KEY[error.messageKey] ?? REASON_BY_STATUS[error.status] ?? 'failed';
}

/** How the uploader sends the file: a form, or the file as the body. */
type BodyForm = { route: 'multipart'; boundary: string } | { route: 'raw'; file: FileStart };

function bodyForm(request: HttpRequest, uploaderName: string | null): BodyForm {
  const contentType = request.headers['content-type'];
  if (bareContentType(contentType) === 'multipart/form-data') return { route: 'multipart', boundary: multipartBoundary(contentType!) };
  return { route: 'raw', file: { fieldName: null, fileName: uploaderName, declaredType: bareContentType(contentType) } };
}

/**
 * Upload URLs (docs/upload-urls.md): a team key makes one; anyone holding it uploads one file
 * with it, without a key, as multipart or as the raw body, under the options and limits the URL
 * fixed. The checks of a use, in order: the client address's failed-authentication budget (429),
 * the signature (403, counted as a failed authentication) and expiry (410), the URL's and the
 * team's use budgets (429), the body's form (400), the URL's row and its maker's access (403 when
 * that key or session can no longer upload, or was deleted), a raw body's name and type (400, 415), the Idempotency-Key (a replay, 409 running, 422 another request), the claim
 * (409 running, 410 used), then everything an ordinary upload checks, from the headers first.
 */
export function uploadUrlRoutes(deps: UploadUrlRouteDeps): Route[] {
  const { metrics, uploadUseCase: uploads } = deps;
  const route = teamRouteBuilder(deps, deps.maxJsonBodyBytes, MEDIA_BASE);

  /** Records a created URL as its Idempotency-Key's answer, in the URL row's transaction. */
  const recordAnswer = async (claim: IdempotencyClaim, answer: CreatedUploadUrl, em: EntityManager): Promise<void> => {
    // Taken over as stale (its instance looked gone): the request running under the key now answers; nothing is made here.
    if (!(await deps.idempotency.complete(claim, { status: 201, body: answer }, em))) throw idempotencyInFlight();
  };

  /** A use's refusal, whether its guard or the upload refused it, counts in media_upload_urls_refused_total. */
  const countingRefusals = async <T>(request: HttpRequest, work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      metrics.uploadUrlsRefused.inc({ reason: refusalReason(error, request) });
      throw error;
    }
  };

  /** The URL is the access, not a key: the signature (a wrong one counts as a failed authentication), then the URL's and the team's use budgets. */
  const urlHolder: Guard<UrlHolder> = async (request) => {
    const teamId = request.params['teamId']!;
    const urlId = request.params['urlId']!;
    await checkCredential(deps.authFailures, request.remoteAddress, (error) => error.status === 403, async () =>
      deps.uploadUrls.verify(teamId, urlId, request.query.get('expires'), request.query.get('signature')));
    await deps.uploadUrlLimits.perUrl.consume(urlId);
    await deps.uploadUrlLimits.perTeam.consume(teamId);
    // The use budgets' RateLimit headers are not sent: the holder has no key whose budget they would describe.
    return { caller: { teamId, urlId } };
  };

  const useUrl = async ({ request, teamId, urlId }: RouteCall<UrlHolder>): Promise<HttpResult> => {
    const uploaderName = request.query.get('fileName');
    const form = bodyForm(request, uploaderName);
    // What the URL fixes, read whatever its state: a retry of a used URL with its Idempotency-Key is replayed through it.
    const url = await deps.uploadUrls.constraints(teamId, urlId);
    // The URL acts for its maker: once that key or session could not make this upload itself, neither can the URL.
    if (!(await makerMayUpload(deps.authenticator, teamId, url.maker))) throw uploadUrlRefused('revoked');

    // What the URL fixed wins; the uploader may only name the file when the URL does not.
    const options: UploadOptions = { ...url.options, fileName: url.options.fileName ?? (uploaderName === null ? null : parseFileName(uploaderName)) };
    const constraints: FileConstraints = { maxFileBytes: url.maxSizeBytes, contentTypes: url.contentTypes };
    if (form.route === 'raw') {
      // The raw body's headers are the file's: its name and type are judged before any byte.
      if (options.fileName === null) throw badRequest('The file has no name; give fileName', 'fileName');
      const refusal = refusalAtFileStart(options, form.file) ?? declaredTypeRefusal(constraints, form.file.declaredType);
      if (refusal) throw refusal;
    }
    // The upload acts for the key or session that made the URL, with no permission of its own beyond this one file.
    const principal: Principal = {
      keyId: url.keyId, sessionId: url.sessionId, keyPrefix: null, userId: null, rateLimitKey: `upload-url:${url.id}`,
      teamId, memberId: null, actingMemberId: null, teamArchived: false, permissions: new Set(), scopes: [],
    };
    const mediaId = newMediaId();
    const result = await uploads.receive({
      kind: form.route, principal, target: mediaTarget(deps, principal, form.route, options), constraints, mediaId,
      body: request.body, clientGone: request.signal,
      idempotency: { route: USE_ROUTE, key: request.headers['idempotency-key'], options, statedUpFront: { urlId } },
      createParser: (events) => (form.route === 'multipart' ? new MultipartParser(form.boundary, events) : new RawBodyParser(form.file, events)),
      // Claimed only after the Idempotency-Key: a retry whose first use committed is replayed, not refused as used.
      aroundStore: (store) => storeWithClaimedUrl(deps, request.log, { teamId, urlId, mediaId }, store),
    });
    return uploadAnswer(result, { 'Cache-Control': 'no-store' });
  };

  return [
    route('POST', CREATE_PATH, teamCaller(deps, uploadAccess), async (call) => {
      const { request, principal } = call;
      const body = await call.body();
      const answerHeaders = { 'Cache-Control': 'no-store' };
      // With an Idempotency-Key, a retry gets the same URL: the answer is recorded with the URL's row.
      return runIdempotent(deps, request, { teamId: principal.teamId, route: CREATE_ROUTE, fingerprint: fingerprintOf(body), headers: answerHeaders }, async (claim) => {
        const team = await deps.teamStates.get(principal.teamId);
        const limits = { maxMediaFileSize: team.limits.maxMediaFileSize, routeMaxBytes: MAX_BODY_BYTES.raw };
        const created = await deps.uploadUrls.create(principal, body, limits, claim ? (answer, em) => recordAnswer(claim, answer, em) : undefined);
        metrics.uploadUrlsCreated.inc();
        return { ...json(201, created, answerHeaders), recorded: claim !== null };
      });
    }),
    // The body is the upload's, streamed by the use case: no JSON body is read.
    defineRoute(
      'POST', `${MEDIA_BASE}${USE_PATH}`,
      (request) => countingRefusals(request, () => urlHolder(request)),
      (call) => countingRefusals(call.request, () => useUrl(call)),
      0,
    ),
  ];
}
