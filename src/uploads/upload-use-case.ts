import type { Principal } from '../auth/principal.ts';
import type { IdempotencyClaim, IdempotencyKeys, StoredAnswer } from '../domain/idempotency/idempotency-keys.ts';
import { idempotencyKeyReused } from '../errors/errors.ts';
import { ServiceError } from '../errors/service-error.ts';
import type { Metrics, UploadOutcome } from '../observability/metrics.ts';
import { StorageError } from '../storage/object-store.ts';
import type { AdmissionGate } from './admission/admission-gate.ts';
import { fingerprintOf, parseIdempotencyKey } from './idempotency/idempotency-key.ts';
import { patternOf } from './idempotency/run-idempotent.ts';
import type { FileConstraints } from './options/file-constraints.ts';
import type { UploadOptions } from './options/upload-options.ts';
import type { BodyParser, BodyParserEvents } from './parsers/body-parser.ts';
import type { UploadBody } from './receive/upload-body.ts';
import type { PreparedUpload, UploadRoute, UploadService } from './receive/upload-service.ts';
import type { CommittedUpload, UploadTarget } from './targets/upload-target.ts';

export interface UploadUseCaseDeps {
  gate: AdmissionGate;
  uploads: UploadService;
  metrics: Metrics;
  idempotency: IdempotencyKeys;
}

/** A request body as an upload reads it, and counts it for the metrics. */
export type ReceivedBody = UploadBody & { readonly bytesReceived: number };

/** What a route knows of an upload once it has authorized it and parsed what comes before the body. */
export interface UploadCall<Result extends CommittedUpload = CommittedUpload> {
  kind: UploadRoute;
  principal: Principal;
  /** The kind of file (media, team file, to-do file); a replayed retry's body is read through it too. */
  target: UploadTarget<Result>;
  body: ReceivedBody;
  /** Aborted when the client goes away. */
  clientGone: AbortSignal;
  createParser: (events: BodyParserEvents) => BodyParser;
  /** Size and type limits the request fixed for its file (an upload URL's). */
  constraints?: FileConstraints;
  /** The media id to store the file as (an upload URL needs it to know whether a failure committed); a new one otherwise. */
  mediaId?: string;
  /** For routes that take an Idempotency-Key (media uploads); without it the header is not read. */
  idempotency?: {
    /** `<METHOD> <pattern>`, as the route declares itself: the key's route, and the label of its replays' metric. */
    route: string;
    /** The request's Idempotency-Key header as sent; undefined without one. */
    key: string | undefined;
    /** Options known before the body (multipart: the query); null when the body carries them (JSON). */
    options: UploadOptions | null;
    /** What the request states before its body besides its options (an upload URL's id), compared with the key's first request at once (422). */
    statedUpFront?: Record<string, unknown>;
  };
  /**
   * Wraps the store step, after the Idempotency-Key's claim and never for a replay: an upload URL
   * is claimed before it (so a retry of a used URL replays rather than answering 410) and consumed
   * or released after it.
   */
  aroundStore?: (store: () => Promise<Result>) => Promise<Result>;
}

/** How an upload ended: its file committed now, or the first answer of a completed Idempotency-Key again. */
export type UploadResult<Result> = { replayed: false; file: Result } | { replayed: true; answer: StoredAnswer };

/**
 * One upload, from the moment a route hands over its body to the result: the Idempotency-Key (when
 * the route takes one), the refusals from the headers, the admission gate, the body, the commit,
 * and the upload's metrics. Every route that stores an upload (spec 4.2 and 4.3, an upload URL,
 * team and to-do files) calls receive(), so the key, the gate and the metrics behave the same everywhere.
 */
export class UploadUseCase {
  private readonly deps: UploadUseCaseDeps;

  constructor(deps: UploadUseCaseDeps) {
    this.deps = deps;
  }

  /**
   * With an Idempotency-Key the key is claimed first (one round trip, before any refusal that the
   * first request's own commit could cause, such as a now full team): a completed key replays,
   * a running one answers 409, another request 422. A claimed key is freed when the upload fails.
   */
  async receive<Result extends CommittedUpload>(call: UploadCall<Result>): Promise<UploadResult<Result>> {
    const keyed = call.idempotency;
    const key = keyed ? parseIdempotencyKey(keyed.key) : null;
    let claim: IdempotencyClaim | null = null;
    if (keyed && key !== null) {
      // An upload the gate would refuse now costs no claim (nor its release): overload stays cheap.
      const busy = this.deps.gate.refusal(call.principal.teamId);
      if (busy) throw busy;
      const outcome = await this.deps.idempotency.claim({
        teamId: call.principal.teamId, key, route: keyed.route, fingerprint: fingerprintOf({ options: keyed.options, ...keyed.statedUpFront }),
      });
      if (outcome.kind === 'completed') return this.replay(call, keyed.route, outcome.answer, outcome.contentFingerprint);
      claim = outcome.claim;
    }
    try {
      const store = () => this.stream(call, claim);
      const file = await (call.aroundStore ? call.aroundStore(store) : store());
      return { replayed: false, file };
    } catch (error) {
      // A completed claim is left alone (abandon deletes only a running one), whatever failed after the commit.
      if (claim) await this.deps.idempotency.abandon(claim);
      throw error;
    }
  }

  /**
   * Prepares the upload (refusals from the headers), waits for an admission slot with the socket
   * paused, streams and commits it, and records its metrics. `claim`: the request's claimed
   * Idempotency-Key, whose answer its commit records.
   */
  private async stream<Result extends CommittedUpload>(call: UploadCall<Result>, claim: IdempotencyClaim | null): Promise<Result> {
    const { gate, uploads, metrics } = this.deps;
    const prepared = await uploads.prepare(call.principal, call.kind, call.body.declaredLength, call.target, call.constraints);
    const arrived = performance.now();
    const release = await gate.admit(prepared.principal.teamId, call.clientGone);
    const started = performance.now();
    let outcome: UploadOutcome = 'failed';
    try {
      const created = await uploads.run({
        prepared, body: call.body, createParser: call.createParser, clientGone: call.clientGone, mediaId: call.mediaId, idempotency: claim,
      });
      outcome = 'created';
      metrics.uploadStages.observe({ stage: 'queue' }, (started - arrived) / 1000);
      return created;
    } catch (error) {
      outcome = outcomeOf(error, call.clientGone);
      const storageError = storageErrorOf(error);
      if (storageError) metrics.storageWriterErrors.inc({ code: storageError.code });
      throw error;
    } finally {
      release();
      // Once per upload, not per chunk: the body's byte count is kept by the body anyway.
      metrics.uploadBytes.inc({ route: prepared.route }, call.body.bytesReceived);
      metrics.uploadDuration.observe({ route: prepared.route, outcome }, (performance.now() - started) / 1000);
    }
  }

  /** A retry of a completed upload: its body is read and compared (nothing stored), then the first answer is given again. */
  private async replay<Result extends CommittedUpload>(
    call: UploadCall<Result>, route: string, answer: StoredAnswer, contentFingerprint: string | null,
  ): Promise<UploadResult<Result>> {
    const release = await this.deps.gate.admit(call.principal.teamId, call.clientGone);
    try {
      const prepared: PreparedUpload<Result> = {
        principal: call.principal, route: call.kind, target: call.target, maxFileBytes: null, constraints: null, freeStorage: null, stripMetadataByDefault: false,
      };
      const fingerprint = await this.deps.uploads.fingerprint({ prepared, body: call.body, createParser: call.createParser });
      if (fingerprint !== contentFingerprint) throw idempotencyKeyReused();
    } finally {
      release();
    }
    this.deps.metrics.idempotentReplays.inc({ route: patternOf(route) });
    return { replayed: true, answer };
  }
}

/** The outcome label of a failed upload. The transport aborts `clientGone` whenever the client leaves (its ClientAbortedError comes with it). */
function outcomeOf(error: unknown, clientGone: AbortSignal): UploadOutcome {
  if (clientGone.aborted) return 'aborted';
  return error instanceof ServiceError && error.status < 500 ? 'refused' : 'failed';
}

/** The storage failure behind an upload's error: thrown as is, or the cause of the 503 it became. */
function storageErrorOf(error: unknown): StorageError | null {
  if (error instanceof StorageError) return error;
  if (error instanceof ServiceError && error.cause instanceof StorageError) return error.cause;
  return null;
}
