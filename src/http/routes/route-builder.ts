import type { PermissionName } from '../../auth/permissions.ts';
import type { Principal } from '../../auth/principal.ts';
import type { FailureThrottle } from '../../auth/failure-throttle.ts';
import type { Caller } from '../../domain/members/member-admin.service.ts';
import type { Actor } from '../../domain/actor.ts';
import { authorizeTeamCaller, requireOperator, type TeamAccess, type TeamCallerDeps, type TeamGrant } from '../guards.ts';
import type { HttpMethod, HttpRequest, HttpResult, Route } from '../types.ts';

/**
 * The one way to write a route: a route declares its method, its path, who may call it (the
 * audience's guard, with the team routes' permission) and its handler; the builder runs the guard
 * (authentication, authorization, rate limit) before the handler and puts the guard's headers
 * (RateLimit-*) on the answer. One builder per audience:
 *
 * - teamRouteBuilder: a team's key or a member's session, for `:teamId` routes (media, team
 *   administration, automations): authorizeTeamCaller (401, 403, archived team 403, 429);
 * - userRouteBuilder: the signed-in user's session token (401, 429);
 * - operatorRouteBuilder: the operator secret (`authSecret` header; 401, 429 per address);
 * - publicRouteBuilder: anyone (routes whose access is in the request itself, such as a signature).
 */

/** What every handler gets besides its caller: the request, its path parameters, its JSON body. */
export interface RouteCallBase {
  request: HttpRequest;
  /** A path parameter ('' when absent). */
  param(name: string): string;
  /** The JSON body, read on call (at most the builder's maxJsonBodyBytes; an empty body is `{}`). */
  body(): Promise<unknown>;
}

export type RouteCall<Caller> = RouteCallBase & Caller;

/** Admits the caller of a request (or throws its 401, 403 or 429); `headers` go on the answer. */
export type Guard<Caller> = (request: HttpRequest) => Promise<{ caller: Caller; headers?: Record<string, string> }>;

export type RouteHandler<Caller> = (call: RouteCall<Caller>) => Promise<HttpResult> | HttpResult;

/** A route: the guard first, then the handler, whose answer gets the guard's headers. */
export function defineRoute<Caller>(
  method: HttpMethod, pattern: string, guard: Guard<Caller>, handle: RouteHandler<Caller>, maxJsonBodyBytes: number,
): Route {
  return {
    method,
    pattern,
    handler: async (request) => {
      const { caller, headers } = await guard(request);
      const result = await handle({
        ...caller,
        request,
        param: (name) => request.params[name] ?? '',
        body: () => request.body.json(maxJsonBodyBytes),
      });
      return headers ? { ...result, headers: { ...result.headers, ...headers } } : result;
    },
  };
}

// ---- A team's routes ------------------------------------------------------------------------

export const TEAM_BASE = '/v1/teams/:teamId';
export const MEDIA_BASE = '/v1/cdn/media/:teamId';

/** Who calls a team route, once the key or session is checked for the team and the permission. */
export interface TeamCaller {
  teamId: string;
  principal: Principal;
  actor: Actor;
}

export type TeamCall = RouteCall<TeamCaller>;
export type TeamGuard = Guard<TeamCaller>;
export type TeamRouteDeps = TeamCallerDeps;

/** The guard of a team route: authorizeTeamCaller with the route's access. */
export function teamCaller(deps: TeamRouteDeps, access: TeamAccess): TeamGuard {
  return async (request) => teamGrant(await authorizeTeamCaller(request, deps, access));
}

/** The team caller of a grant (for a guard that calls authorizeTeamCaller itself, like the media bulk route's). */
export function teamGrant({ principal, headers }: TeamGrant): { caller: TeamCaller; headers: Record<string, string> } {
  return { caller: { teamId: principal.teamId, principal, actor: { teamMemberId: principal.actingMemberId } }, headers };
}

export type TeamRoute = (
  method: HttpMethod,
  path: string,
  /** The permission the caller needs (null: any full key of the team), or a guard of the route's own. */
  permission: PermissionName | null | TeamGuard,
  handle: RouteHandler<TeamCaller>,
  options?: { whileArchived?: boolean },
) => Route;

/**
 * Builds the routes of one team resource under `base` (which holds `:teamId`): each checks, in
 * order, the key (401), its team (401), its scope (403: a narrowed key reaches none of these
 * routes), the permission (403) and, for a change, that the team is not archived (403
 * error.team.archived; `whileArchived` lets one through), then the rate limit (429), and answers
 * with the key's RateLimit headers.
 */
export function teamRouteBuilder(deps: TeamRouteDeps, maxJsonBodyBytes: number, base: string = TEAM_BASE): TeamRoute {
  return (method, path, permission, handle, options = {}) => {
    const guard = typeof permission === 'function' ? permission : teamCaller(deps, { ...(permission && { permission }), ...options });
    return defineRoute(method, `${base}${path}`, guard, handle, maxJsonBodyBytes);
  };
}

/** The caller as services see it: the actor for the log and the key's permissions (what it may grant). */
export function callerOf(call: TeamCall): Caller {
  return { ...call.actor, permissions: call.principal.permissions };
}

// ---- The signed-in user's routes ------------------------------------------------------------

/** Who calls a user route, once the session token is checked. */
export interface UserCaller {
  userId: string;
  sessionId: string;
}

export type UserCall = RouteCall<UserCaller>;
export type UserRouteDeps = TeamCallerDeps;
export type UserRoute = (method: HttpMethod, pattern: string, handle: RouteHandler<UserCaller>) => Route;

/**
 * Builds the routes of the signed-in user (`/v1/users/me...` and the like): each checks the session
 * token (401; an API key is not a person and gets 401 too), then the session's rate limit (429),
 * and answers with its RateLimit headers.
 */
export function userRouteBuilder(deps: UserRouteDeps, maxJsonBodyBytes: number): UserRoute {
  const guard: Guard<UserCaller> = async (request) => {
    const { userId, sessionId } = await deps.authenticator.identifyUser(request.headers['authorization'], request.remoteAddress);
    const headers = await deps.rateLimiter.consume(`session:${sessionId}`);
    return { caller: { userId, sessionId }, headers };
  };
  return (method, pattern, handle) => defineRoute(method, pattern, guard, handle, maxJsonBodyBytes);
}

// ---- A team API key's own routes ----------------------------------------------------------

/** Who calls a key route: the key, whichever team it belongs to. */
export interface KeyCaller {
  principal: Principal;
}

export type KeyRoute = (method: HttpMethod, pattern: string, handle: RouteHandler<KeyCaller>) => Route;

/**
 * Builds the routes about the calling key itself (no team in the path: the key says which): each
 * checks the key (401; a session token is not a key and gets 401 too, as a key does on the user
 * routes), then the key's rate limit (429), and answers with its RateLimit headers. A key narrowed
 * by a scope passes: these routes only tell the key what it is.
 */
export function keyRouteBuilder(deps: TeamCallerDeps, maxJsonBodyBytes: number): KeyRoute {
  const guard: Guard<KeyCaller> = async (request) => {
    const principal = await deps.authenticator.identifyKey(request.headers['authorization'], request.remoteAddress);
    const headers = await deps.rateLimiter.consume(principal.rateLimitKey);
    return { caller: { principal }, headers };
  };
  return (method, pattern, handle) => defineRoute(method, pattern, guard, handle, maxJsonBodyBytes);
}

// ---- The operator's routes ------------------------------------------------------------------

export interface OperatorRouteDeps {
  /** The operator secret, presented in the `authSecret` header. */
  authSecret: string;
  /** Wrong authSecret values count here per client address (429 past the budget). */
  authFailures: FailureThrottle;
}

export type OperatorCall = RouteCall<object>;
export type OperatorRoute = (method: HttpMethod, pattern: string, handle: RouteHandler<object>) => Route;

/** Builds the operator's routes: each checks the `authSecret` header (401; 429 for an address that keeps guessing). No rate limit, no headers. */
export function operatorRouteBuilder(deps: OperatorRouteDeps, maxJsonBodyBytes: number): OperatorRoute {
  const guard: Guard<object> = async (request) => {
    await requireOperator(request, deps.authSecret, deps.authFailures);
    return { caller: {} };
  };
  return (method, pattern, handle) => defineRoute(method, pattern, guard, handle, maxJsonBodyBytes);
}

// ---- Public routes --------------------------------------------------------------------------

export type PublicCall = RouteCall<object>;
export type PublicRoute = (method: HttpMethod, pattern: string, handle: RouteHandler<object>) => Route;

const anyone: Guard<object> = async () => ({ caller: {} });

/**
 * Builds routes anyone may call: what limits them is their own (a signature, a token in the body,
 * a per-address budget), in the handler. `maxJsonBodyBytes` 0 for routes that read no body.
 */
export function publicRouteBuilder(maxJsonBodyBytes = 0): PublicRoute {
  return (method, pattern, handle) => defineRoute(method, pattern, anyone, handle, maxJsonBodyBytes);
}
