import { randomUUID } from 'node:crypto';
import type { EntityManager, MikroORM, QueryResult } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { idempotencyInFlight, idempotencyKeyReused } from '../../errors/errors.ts';
import type { ReservationOwner } from '../usage/reservation-owner.ts';

/** How long a key is kept (API additions: 24 hours); the claim function (Migration20261124010000) uses the same. */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 3_600_000;

/** What a request with an Idempotency-Key is, as its claim records it. */
export interface IdempotentRequest {
  teamId: string;
  key: string;
  /** The route as it declares itself, e.g. `POST /v1/cdn/media/:teamId/upload/file`. */
  route: string;
  /** fingerprintOf() what the request asks for before its body (options, query): a difference answers 422 at once. */
  fingerprint: string;
}

/** A key this request holds while it runs: complete() it with its answer, or abandon() it when the request fails. */
export interface IdempotencyClaim {
  readonly teamId: string;
  readonly key: string;
  readonly claimId: string;
}

/** The first request's answer, as a retry gets it again. */
export interface StoredAnswer {
  status: number;
  headers: Record<string, string>;
  /** The JSON body's text exactly as first sent; null for an answer without a body. */
  bodyText: string | null;
}

export type ClaimOutcome =
  | { kind: 'claimed'; claim: IdempotencyClaim }
  /** The key's request completed within 24 hours; `contentFingerprint` is what its body was (null when it had none to compare). */
  | { kind: 'completed'; answer: StoredAnswer; contentFingerprint: string | null };

const CLAIM = `select o_claimed as claimed, o_route as route, o_request_fingerprint as request_fingerprint,
  o_content_fingerprint as content_fingerprint, o_state as state, o_status as status, o_headers as headers, o_body as body
  from idempotency_claim(?, ?, ?, ?, ?, ?, ?::uuid)`;

const COMPLETE = `update idempotency_key set state = 'completed', status = ?, headers = ?::jsonb, body = ?, content_fingerprint = ?
 where team_id = ? and key = ? and claim_id = ? and state = 'running'`;

const ABANDON = `delete from idempotency_key where team_id = ? and key = ? and claim_id = ? and state = 'running'`;

const SWEEP_BATCH = 1000;
const SWEEP_EXPIRED = `delete from idempotency_key where (team_id, key) in (
  select team_id, key from idempotency_key where expires_at <= ? limit ${SWEEP_BATCH} for update skip locked)`;

const RELEASE_PREVIOUS_INCARNATIONS = `delete from idempotency_key where state = 'running' and instance_id = ? and boot_id is distinct from ?::uuid`;

/** A failed abandon() (database away) is tried again this often, so a failed request never holds its key for long. */
const ABANDON_RETRY_MS = 5_000;

interface ClaimRow {
  claimed: boolean;
  route: string;
  request_fingerprint: string;
  content_fingerprint: string | null;
  state: 'running' | 'completed';
  status: number | null;
  headers: Record<string, string> | null;
  body: string | null;
}

export interface IdempotencyKeysOptions {
  orm: MikroORM;
  /** This process (InstanceIdentity): a claim of a process that is gone is free again at once. Null (CLI): claims only expire. */
  owner: ReservationOwner | null;
  logger: Pick<Logger, 'warn' | 'error'>;
}

/**
 * Idempotency keys, claimed atomically in PostgreSQL so that they hold across
 * every instance sharing the database:
 *
 * - claim() is one round trip (the plpgsql function idempotency_claim): it
 *   inserts a running claim, or finds the key's row. A running claim of
 *   another live request answers 409, another route or fingerprint 422, a
 *   completed one its answer. A running claim whose process is gone (its
 *   InstanceIdentity lock is free, or it is an earlier start of this instance)
 *   and an expired row are taken over.
 * - complete() records the answer; an upload records it instead in the
 *   transaction of its media commit (media_commit_uploads_idempotent).
 * - abandon() frees the key of a request that failed, so its retry may run.
 * - sweepExpired() deletes keys older than 24 hours (the crash sweeper runs it).
 */
export class IdempotencyKeys {
  private readonly orm: MikroORM;
  private readonly owner: ReservationOwner | null;
  private readonly logger: Pick<Logger, 'warn' | 'error'>;
  private readonly pendingAbandons = new Map<string, IdempotencyClaim>();
  private retryTimer: NodeJS.Timeout | null = null;

  constructor(options: IdempotencyKeysOptions) {
    this.orm = options.orm;
    this.owner = options.owner;
    this.logger = options.logger;
  }

  /** Claims the key for `request`, or answers what the key already holds; throws 409 while it runs elsewhere, 422 for another request. */
  async claim(request: IdempotentRequest): Promise<ClaimOutcome> {
    const claimId = randomUUID();
    const [row] = await this.orm.em.fork().execute<ClaimRow[]>(CLAIM, [
      request.teamId, request.key, request.route, request.fingerprint, claimId, this.owner?.instanceId ?? null, this.owner?.bootId ?? null,
    ]);
    if (!row) throw new Error('idempotency_claim returned no row');
    if (row.claimed) return { kind: 'claimed', claim: { teamId: request.teamId, key: request.key, claimId } };
    if (row.route !== request.route || row.request_fingerprint !== request.fingerprint) throw idempotencyKeyReused();
    if (row.state === 'running') throw idempotencyInFlight();
    return {
      kind: 'completed',
      answer: { status: row.status ?? 200, headers: row.headers ?? {}, bodyText: row.body },
      contentFingerprint: row.content_fingerprint,
    };
  }

  /**
   * Records the answer of a claimed request (`em`: inside the transaction of the request's own
   * writes). False when the claim was no longer this request's (taken over as stale).
   */
  async complete(claim: IdempotencyClaim, answer: { status: number; headers?: Record<string, string>; body?: unknown }, em?: EntityManager, contentFingerprint: string | null = null): Promise<boolean> {
    const bodyText = answer.body === undefined ? null : JSON.stringify(answer.body);
    const result = await (em ?? this.orm.em.fork()).execute<QueryResult>(
      COMPLETE,
      [answer.status, JSON.stringify(answer.headers ?? {}), bodyText, contentFingerprint, claim.teamId, claim.key, claim.claimId],
      'run',
    );
    return result.affectedRows === 1;
  }

  /** Frees the key of a request that failed; a completed claim is left alone. Retried in the background while the database is away. */
  async abandon(claim: IdempotencyClaim): Promise<void> {
    try {
      await this.orm.em.fork().execute(ABANDON, [claim.teamId, claim.key, claim.claimId]);
    } catch (error) {
      this.logger.warn({ err: error, teamId: claim.teamId }, 'could not free an idempotency key; retrying');
      this.pendingAbandons.set(claim.claimId, claim);
      this.scheduleRetry();
    }
  }

  /** Deletes keys past their 24 hours (as of `now`); answers how many. Safe on every instance at once. */
  async sweepExpired(now = new Date()): Promise<number> {
    let deleted = 0;
    for (;;) {
      const rows = (await this.orm.em.fork().execute<QueryResult>(SWEEP_EXPIRED, [now], 'run')).affectedRows;
      deleted += rows;
      if (rows < SWEEP_BATCH) return deleted;
    }
  }

  /** Frees the running claims of this instance's earlier starts (dead: this process holds the instance id). */
  async releasePreviousIncarnations(): Promise<number> {
    if (!this.owner) return 0;
    return (await this.orm.em.fork().execute<QueryResult>(RELEASE_PREVIOUS_INCARNATIONS, [this.owner.instanceId, this.owner.bootId], 'run')).affectedRows;
  }

  /** Stops retrying abandons (shutdown); a claim left running is freed by the next start or by any instance once this one is gone. */
  close(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  private scheduleRetry(): void {
    if (this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      const claims = [...this.pendingAbandons.values()];
      this.pendingAbandons.clear();
      for (const claim of claims) void this.abandon(claim);
    }, ABANDON_RETRY_MS);
    this.retryTimer.unref();
  }
}
