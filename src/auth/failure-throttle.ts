import { ServiceError } from '../errors/service-error.ts';

/** Counts failed attempts per client address and refuses an address past its budget with 429. */
export interface FailureThrottle {
  refuseIfExhausted(client: string): Promise<void>;
  count(client: string): Promise<void>;
}

/** Which errors of an attempt are a failed guess (a wrong key, token, secret or signature), never other errors. */
export type IsFailure = (error: ServiceError) => boolean;

/**
 * Checks a credential (API key, session, upload URL signature, operator secret, verification
 * token) for `client`: a valid one is served whatever the address's budget, so that other
 * requests' failures from the same address (a proxy, a NAT, a stale key on the next server) never
 * lock it out. A failure is counted, and past the budget answered 429 instead of its own error.
 *
 * `attempt` gets `beforeGuessLookup`, to call before it would look up a credential it knows
 * nothing of (no cache entry, no such key prefix): past the budget that refuses with 429, so a
 * guesser's requests cost no database lookup.
 */
export async function checkCredential<T>(
  throttle: FailureThrottle, client: string, isFailure: IsFailure, attempt: (beforeGuessLookup: () => Promise<void>) => Promise<T>,
): Promise<T> {
  try {
    return await attempt(() => throttle.refuseIfExhausted(client));
  } catch (error) {
    if (error instanceof ServiceError && isFailure(error)) {
      await throttle.refuseIfExhausted(client);
      await throttle.count(client);
    }
    throw error;
  }
}

export const isUnauthorized: IsFailure = (error) => error.status === 401;
