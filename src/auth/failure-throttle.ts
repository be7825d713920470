import { ServiceError } from '../errors/service-error.ts';

/** Counts failed attempts per client address and refuses an address past its budget with 429. */
export interface FailureThrottle {
  refuseIfExhausted(client: string): Promise<void>;
  count(client: string): Promise<void>;
}

/**
 * Runs `attempt` for `client` behind `throttle`: refused with 429 (before anything is looked up)
 * once the address is past its budget, and counted when the attempt fails in a way `isFailure`
 * says is a guess (a wrong key, token, secret or signature), never for other errors.
 */
export async function throttledAttempt<T>(
  throttle: FailureThrottle, client: string, isFailure: (error: ServiceError) => boolean, attempt: () => Promise<T>,
): Promise<T> {
  await throttle.refuseIfExhausted(client);
  try {
    return await attempt();
  } catch (error) {
    if (error instanceof ServiceError && isFailure(error)) await throttle.count(client);
    throw error;
  }
}

export const isUnauthorized = (error: ServiceError): boolean => error.status === 401;
