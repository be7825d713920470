import { parseIdempotencyKey } from './idempotency-key.ts';
import type { IdempotencyClaim, IdempotencyKeys, IdempotentRequest, StoredAnswer } from '../../domain/idempotency/idempotency-keys.ts';
import type { Metrics } from '../../observability/metrics.ts';

/** The header a replayed answer carries (API additions). */
export const REPLAYED_HEADER = 'Idempotent-Replayed';

/** What this module reads of a request: its headers (names in lower case), as the HTTP layer's requests have them. */
export interface KeyedRequest {
  headers: Record<string, string>;
}

/** An answer as a key records and replays it: the HTTP layer's results are such answers. */
export interface IdempotentAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** The request's `Idempotency-Key`, or null without one; 400 when it is not 1-255 printable ASCII characters. */
export function idempotencyKeyOf(request: KeyedRequest): string | null {
  return parseIdempotencyKey(request.headers['idempotency-key']);
}

/** The first request's answer again, marked replayed; `headers` (e.g. this request's RateLimit headers) are added. */
export function replayedAnswer(answer: StoredAnswer, headers: Record<string, string> = {}): IdempotentAnswer {
  return {
    status: answer.status,
    ...(answer.bodyText !== null && { body: JSON.parse(answer.bodyText) as unknown }),
    headers: { ...answer.headers, ...headers, [REPLAYED_HEADER]: 'true' },
  };
}

export interface IdempotentRouteDeps {
  idempotency: IdempotencyKeys;
  metrics: Metrics;
}

/**
 * Runs `work` at most once per Idempotency-Key, for routes whose whole request is known before
 * `work` starts (a JSON body, headers): `fingerprint` is fingerprintOf() everything that makes the
 * request what it is. Without a key, `work` just runs. With one: the first request runs and its
 * answer (status, body, `keptHeaders`) is recorded; a retry gets that answer with
 * `Idempotent-Replayed: true`; 409 while it runs, 422 for another request under the key; a
 * request that throws frees the key. `work` may record the answer itself, in its own transaction
 * (`complete(claim, answer, em)`), and then returns `recorded: true`.
 */
export async function runIdempotent<Answer extends IdempotentAnswer>(
  deps: IdempotentRouteDeps,
  request: KeyedRequest,
  what: Omit<IdempotentRequest, 'key'> & { keptHeaders?: string[]; headers?: Record<string, string> },
  work: (claim: IdempotencyClaim | null) => Promise<Answer & { recorded?: boolean }>,
): Promise<Answer | IdempotentAnswer> {
  const key = idempotencyKeyOf(request);
  if (key === null) return work(null);
  const outcome = await deps.idempotency.claim({ teamId: what.teamId, key, route: what.route, fingerprint: what.fingerprint });
  if (outcome.kind === 'completed') {
    deps.metrics.idempotentReplays.inc({ route: patternOf(what.route) });
    return replayedAnswer(outcome.answer, what.headers);
  }
  const { claim } = outcome;
  let result: Answer & { recorded?: boolean };
  try {
    result = await work(claim);
  } catch (error) {
    await deps.idempotency.abandon(claim);
    throw error;
  }
  if (result.status >= 400) {
    await deps.idempotency.abandon(claim);
    return result;
  }
  if (!result.recorded) {
    const kept = Object.fromEntries(Object.entries(result.headers ?? {}).filter(([name]) => what.keptHeaders?.some((k) => k.toLowerCase() === name.toLowerCase())));
    try {
      await deps.idempotency.complete(claim, { status: result.status, headers: kept, body: result.body });
    } catch (error) {
      // Unrecorded, the claim would answer 409 to every retry for 24 hours: free it (the retry then runs again).
      await deps.idempotency.abandon(claim);
      throw error;
    }
  }
  const { recorded: _recorded, ...answer } = result;
  return answer;
}

/** `POST /v1/...` → `/v1/...`: the metrics label, as media_http_responses_total names routes. */
export function patternOf(route: string): string {
  return route.slice(route.indexOf(' ') + 1);
}
