import type { Authenticator } from '../../../auth/authenticator.ts';
import type { RequestRateLimiter } from '../../../limits/rate-limiter.ts';
import type { Handler, HttpMethod, HttpRequest, HttpResult, Route } from '../../types.ts';

/** What a route of the signed-in user knows once the session token is checked. */
export interface UserCall {
  request: HttpRequest;
  userId: string;
  sessionId: string;
  param(name: string): string;
  body(): Promise<unknown>;
}

export interface UserRouteDeps {
  authenticator: Authenticator;
  rateLimiter: RequestRateLimiter;
}

/**
 * Builds the routes of the signed-in user (`/v1/users/me...` and the like): each checks the session
 * token (401; an API key is not a person and gets 401 too), then the session's rate limit (429),
 * and answers with its RateLimit headers.
 */
export function userRouteBuilder(deps: UserRouteDeps, maxJsonBodyBytes: number) {
  return (method: HttpMethod, pattern: string, handle: (call: UserCall) => Promise<HttpResult>): Route => ({
    method,
    pattern,
    handler: (async (request) => {
      const { userId, sessionId } = await deps.authenticator.identifyUser(request.headers['authorization'], request.remoteAddress);
      const headers = await deps.rateLimiter.consume(`session:${sessionId}`);
      const result = await handle({
        request, userId, sessionId,
        param: (name) => request.params[name] ?? '',
        body: () => request.body.json(maxJsonBodyBytes),
      });
      return { ...result, headers: { ...result.headers, ...headers } };
    }) satisfies Handler,
  });
}

/** Where a sign-in came from, as its session records it. */
export function requestOrigin(request: HttpRequest): { ip: string; userAgent: string | null } {
  return { ip: request.remoteAddress, userAgent: request.headers['user-agent'] ?? null };
}
