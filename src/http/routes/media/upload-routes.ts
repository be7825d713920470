import type { MikroORM } from '@mikro-orm/postgresql';
import type { Authenticator } from '../../../auth/authenticator.ts';
import { Permission, Scope } from '../../../auth/permissions.ts';
import type { Principal } from '../../../auth/principal.ts';
import { fingerprintOf } from '../../../uploads/idempotency/idempotency-key.ts';
import type { DeletionLinks } from '../../../domain/media/deletion-links.ts';
import type { IdempotencyClaim, IdempotencyKeys, StoredAnswer } from '../../../domain/idempotency/idempotency-keys.ts';
import type { UploadCommitter } from '../../../uploads/commit/upload-commit.ts';
import { badRequest, idempotencyKeyReused } from '../../../errors/errors.ts';
import { ServiceError } from '../../../errors/service-error.ts';
import type { AdmissionGate } from '../../../uploads/admission/admission-gate.ts';
import type { RequestRateLimiter } from '../../../limits/rate-limiter.ts';
import type { Metrics, UploadOutcome } from '../../../observability/metrics.ts';
import { StorageError } from '../../../storage/object-store.ts';
import { JsonUploadParser } from '../../../uploads/parsers/json-upload-parser.ts';
import { MultipartParser, multipartBoundary } from '../../../uploads/parsers/multipart-parser.ts';
import { parseDeletionUrlOption, parseMultipartOptions, type UploadOptions } from '../../../uploads/options/upload-options.ts';
import type { PreparedUpload, UploadRoute, UploadService } from '../../../uploads/receive/upload-service.ts';
import type { CommittedUpload } from '../../../uploads/targets/upload-target.ts';
import { MediaUploadTarget } from '../../../uploads/targets/media-upload-target.ts';
import type { BodyParser, BodyParserEvents } from '../../../uploads/parsers/body-parser.ts';
import { authorizeMedia } from '../../guards.ts';
import { idempotencyKeyOf, patternOf, replayedAnswer } from '../../../uploads/idempotency/run-idempotent.ts';
import { ClientAbortedError } from '../../request-body.ts';
import { json, type HttpRequest, type HttpResult, type Route } from '../../types.ts';

export interface UploadRouteDeps {
  authenticator: Authenticator;
  rateLimiter: RequestRateLimiter;
  gate: AdmissionGate;
  uploads: UploadService;
  metrics: Metrics;
  idempotency: IdempotencyKeys;
  orm: MikroORM;
  mediaCommitter: UploadCommitter;
}

/** What streaming one upload needs: the admission gate, the upload core and the metrics. */
export type StreamUploadDeps = Pick<UploadRouteDeps, 'gate' | 'uploads' | 'metrics'>;

/** A media file upload's target (its options known before the body: multipart query, an upload URL's; null for JSON). */
export function mediaTarget(
  deps: Pick<UploadRouteDeps, 'orm' | 'mediaCommitter'>, principal: Principal, route: UploadRoute, options: UploadOptions | null,
): MediaUploadTarget {
  return new MediaUploadTarget({ orm: deps.orm, committer: deps.mediaCommitter }, principal, route, options);
}

/** Refuses a JSON upload body declared as anything but JSON (400) before any byte is read. */
export function requireJsonBody(request: HttpRequest): void {
  const contentType = request.headers['content-type'];
  if (contentType !== undefined && !/json/i.test(contentType)) {
    throw badRequest('The body must be JSON (application/json)', 'content-type');
  }
}

export const uploadAccess = { permission: Permission.mediaUpload, scope: Scope.mediaUpload };

/**
 * Runs one upload of any kind once its route has authorized it: prepares it (refusals from the
 * headers), waits for an admission slot with the socket paused, streams it, answers 201 with
 * `rateHeaders` or throws its refusal, and records its metrics.
 * `mediaId`: the id to store it as (an upload URL needs it to know whether a failure committed);
 * `idempotency`: the request's claimed Idempotency-Key, whose answer its commit records.
 */
export async function streamUpload<Result extends CommittedUpload>(
  deps: StreamUploadDeps,
  request: HttpRequest,
  prepare: () => Promise<PreparedUpload<Result>>,
  createParser: (events: BodyParserEvents) => BodyParser,
  rateHeaders: Record<string, string>,
  { mediaId, idempotency }: { mediaId?: string; idempotency?: IdempotencyClaim | null } = {},
): Promise<HttpResult> {
  const prepared = await prepare();
  const arrived = performance.now();
  const release = await deps.gate.admit(prepared.principal.teamId, request.signal);
  const started = performance.now();
  let outcome: UploadOutcome = 'failed';
  try {
    const created = await deps.uploads.run({ prepared, body: request.body, createParser, clientGone: request.signal, mediaId, idempotency });
    outcome = 'created';
    deps.metrics.uploadStages.observe({ stage: 'queue' }, (started - arrived) / 1000);
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

const MULTIPART_ROUTE = 'POST /v1/cdn/media/:teamId/upload/file';
const JSON_ROUTE = 'POST /v1/cdn/media/:teamId/upload';

/** One upload request as a route hands it on, once authenticated and its options parsed. */
export interface UploadCall {
  request: HttpRequest;
  /** `<METHOD> <pattern>`, as the route declares itself. */
  route: string;
  kind: UploadRoute;
  principal: PreparedUpload['principal'];
  /** Options known before the body (multipart: the query); null when the body carries them (JSON). */
  options: UploadOptions | null;
  /** The media file target the upload is prepared with; a replayed retry's body is read through it too. */
  target: MediaUploadTarget;
  prepare: () => Promise<PreparedUpload>;
  createParser: (events: BodyParserEvents) => BodyParser;
  rateHeaders: Record<string, string>;
  /** The media id to store the file as (see streamUpload); a new one otherwise. */
  mediaId?: string;
  /** What the request states before its body besides its options (an upload URL's id), compared with the key's first request at once (422). */
  statedUpFront?: Record<string, unknown>;
  /**
   * Wraps the store step, after the Idempotency-Key's claim and never for a replay: an upload URL
   * is claimed before it (so a retry of a used URL replays rather than answering 410) and consumed
   * or released after it.
   */
  aroundStore?: (store: () => Promise<HttpResult>) => Promise<HttpResult>;
}

/**
 * Runs one upload: the Idempotency-Key (when sent), the refusals from the headers, the admission
 * gate, the body, the commit. Any route that stores an upload (spec 4.2 and 4.3, and an upload URL)
 * hands its request to this, so the key behaves the same everywhere.
 */
export function uploadRunner(deps: Omit<UploadRouteDeps, 'authenticator' | 'rateLimiter'>): (call: UploadCall) => Promise<HttpResult> {
  /**
   * With an Idempotency-Key the key is claimed first (one round trip, before any refusal that the
   * first request's own commit could cause, such as a now full team): a completed key replays,
   * a running one answers 409, another request 422. A claimed key is freed when the upload fails.
   */
  async function upload(call: UploadCall): Promise<HttpResult> {
    const key = idempotencyKeyOf(call.request);
    let claim: IdempotencyClaim | null = null;
    if (key !== null) {
      // An upload the gate would refuse now costs no claim (nor its release): overload stays cheap.
      const busy = deps.gate.refusal(call.principal.teamId);
      if (busy) throw busy;
      const outcome = await deps.idempotency.claim({
        teamId: call.principal.teamId, key, route: call.route, fingerprint: fingerprintOf({ options: call.options, ...call.statedUpFront }),
      });
      if (outcome.kind === 'completed') return replay(call, outcome.answer, outcome.contentFingerprint);
      claim = outcome.claim;
    }
    try {
      return await store(call, claim);
    } catch (error) {
      // A completed claim is left alone (abandon deletes only a running one), whatever failed after the commit.
      if (claim) await deps.idempotency.abandon(claim);
      throw error;
    }
  }

  function store(call: UploadCall, claim: IdempotencyClaim | null): Promise<HttpResult> {
    const run = () => streamUpload(deps, call.request, call.prepare, call.createParser, call.rateHeaders, { mediaId: call.mediaId, idempotency: claim });
    return call.aroundStore ? call.aroundStore(run) : run();
  }

  /** A retry of a completed upload: its body is read and compared (nothing stored), then the first answer is given again. */
  async function replay(call: UploadCall, answer: StoredAnswer, contentFingerprint: string | null): Promise<HttpResult> {
    const { request } = call;
    const release = await deps.gate.admit(call.principal.teamId, request.signal);
    try {
      const prepared: PreparedUpload = { principal: call.principal, route: call.kind, target: call.target, maxFileBytes: null, constraints: null, freeStorage: null };
      const fingerprint = await deps.uploads.fingerprint({ prepared, body: request.body, createParser: call.createParser });
      if (fingerprint !== contentFingerprint) throw idempotencyKeyReused();
    } finally {
      release();
    }
    deps.metrics.idempotentReplays.inc({ route: patternOf(call.route) });
    return replayedAnswer(answer, call.rateHeaders);
  }

  return upload;
}

/**
 * The two upload routes of spec 4.2 and 4.3. Everything decidable from the
 * headers is decided before the admission gate; while an upload waits for a
 * slot its socket stays paused and no body byte is read.
 */
export function uploadRoutes(deps: UploadRouteDeps & { deletionLinks: DeletionLinks }): Route[] {
  const upload = uploadRunner(deps);
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
        const target = mediaTarget(deps, principal, 'multipart', options);
        return answer(await upload({
          request, route: MULTIPART_ROUTE, kind: 'multipart', principal, options, target, rateHeaders: headers,
          prepare: () => deps.uploads.prepare(principal, 'multipart', request.body.declaredLength, target),
          createParser: (events) => new MultipartParser(boundary, events),
        }), principal.teamId, deletionUrl);
      },
    },
    {
      method: 'POST',
      pattern: patternOf(JSON_ROUTE),
      handler: async (request) => {
        const { principal, headers } = await authorizeMedia(request, deps, uploadAccess);
        requireJsonBody(request);
        const deletionUrl = parseDeletionUrlOption(request.query);
        const target = mediaTarget(deps, principal, 'json', null);
        return answer(await upload({
          request, route: JSON_ROUTE, kind: 'json', principal, options: null, target, rateHeaders: headers,
          prepare: () => deps.uploads.prepare(principal, 'json', request.body.declaredLength, target),
          createParser: (events) => new JsonUploadParser(events),
        }), principal.teamId, deletionUrl);
      },
    },
  ];
}

export function outcomeOf(error: unknown, request: HttpRequest): UploadOutcome {
  if (error instanceof ClientAbortedError || request.signal.aborted) return 'aborted';
  return error instanceof ServiceError && error.status < 500 ? 'refused' : 'failed';
}

/** The storage failure behind an upload's error: thrown as is, or the cause of the 503 it became. */
function storageErrorOf(error: unknown): StorageError | null {
  if (error instanceof StorageError) return error;
  if (error instanceof ServiceError && error.cause instanceof StorageError) return error.cause;
  return null;
}
