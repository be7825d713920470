import { timingSafeEqual } from 'node:crypto';
import { isUnauthorized, checkCredential, type FailureThrottle } from '../auth/failure-throttle.ts';
import type { Authenticator } from '../auth/authenticator.ts';
import type { Principal } from '../auth/principal.ts';
import type { PermissionName, ScopeName } from '../auth/permissions.ts';
import { forbidden, teamArchived, unauthorized } from '../errors/errors.ts';
import type { RequestRateLimiter } from '../limits/rate-limiter.ts';
import type { HttpRequest } from './types.ts';

/**
 * The `authSecret` header of the operator routes, compared in constant time.
 * Wrong secrets count against the client's address in `failures` (shared with
 * API keys), which refuses the address with 429 past its budget.
 */
export async function requireOperator(request: HttpRequest, authSecret: string, failures: FailureThrottle): Promise<void> {
  await checkCredential(failures, request.remoteAddress, isUnauthorized, async () => {
    const presented = Buffer.from(request.headers['authsecret'] ?? '');
    const expected = Buffer.from(authSecret);
    if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) throw unauthorized('Missing or invalid authSecret header');
  });
}

export interface TeamAccess {
  /** The member permission the route needs; without one, any full key of the team may call it. */
  permission?: PermissionName;
  /** The scope that lets a narrowed key reach this route; routes without one need a full key. */
  scope?: ScopeName;
  /** A change an archived team may still make (unarchive, leave, delete a key); reads always may. */
  whileArchived?: boolean;
}

export interface TeamGrant {
  principal: Principal;
  /** RateLimit headers for the response. */
  headers: Record<string, string>;
}

export interface TeamCallerDeps {
  authenticator: Authenticator;
  rateLimiter: RequestRateLimiter;
}

/**
 * The checks every route of a team (`:teamId` in its path: media, team administration,
 * automations) makes before anything else, in the order of spec 7: the key or session (401),
 * its team (401), scope and permission (403), a change to an archived team (403
 * error.team.archived), then the caller's rate limit (429).
 */
export async function authorizeTeamCaller(request: HttpRequest, deps: TeamCallerDeps, access: TeamAccess): Promise<TeamGrant> {
  const principal = checkTeamAccess(request, await deps.authenticator.authenticate(request.headers['authorization'], request.remoteAddress, request.params['teamId'] ?? ''), access);
  const headers = await deps.rateLimiter.consume(principal.rateLimitKey);
  return { principal, headers };
}

function checkTeamAccess(request: HttpRequest, principal: Principal, access: TeamAccess): Principal {
  if (principal.teamId !== request.params['teamId']) throw unauthorized('The API key does not belong to this team');
  if (principal.scopes.length > 0 && !(access.scope && principal.scopes.includes(access.scope))) {
    throw forbidden('The API key lacks the scope for this route', access.scope);
  }
  if (access.permission && !principal.permissions.has(access.permission)) {
    throw forbidden(`Missing permission ${access.permission}`, access.permission);
  }
  if (principal.teamArchived && !access.whileArchived && request.method !== 'GET' && request.method !== 'HEAD') throw teamArchived();
  return principal;
}
