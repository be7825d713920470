import type { Services } from '../../../app.ts';
import type { PermissionName } from '../../../auth/permissions.ts';
import type { Principal } from '../../../auth/principal.ts';
import type { Caller } from '../../../domain/members/member-admin.service.ts';
import type { Actor } from '../../../domain/team-logs/team-log.service.ts';
import { authorizeMedia } from '../../guards.ts';
import type { Handler, HttpMethod, HttpRequest, HttpResult, Route } from '../../types.ts';

export const TEAM_BASE = '/v1/teams/:teamId';

/** What a team route handler knows once the caller's key is checked for the team and the permission. */
export interface TeamCall {
  request: HttpRequest;
  teamId: string;
  principal: Principal;
  actor: Actor;
  param(name: string): string;
  body(): Promise<unknown>;
}

export type TeamRouteDeps = Pick<Services, 'authenticator' | 'rateLimiter'>;

/**
 * Builds the routes of one team resource: each checks, in order, the key (401), its team (401),
 * its scope (403: a narrowed key reaches none of these routes), the permission (403) and, for a
 * change, that the team is not archived (403 error.team.archived; `whileArchived` lets one
 * through), then the rate limit (429), and answers with the key's RateLimit headers.
 */
export function teamRouteBuilder(deps: TeamRouteDeps, maxJsonBodyBytes: number) {
  return (
    method: HttpMethod,
    path: string,
    permission: PermissionName | null,
    handle: (call: TeamCall) => Promise<HttpResult>,
    options: { whileArchived?: boolean } = {},
  ): Route => ({
    method,
    pattern: `${TEAM_BASE}${path}`,
    handler: (async (request) => {
      const { principal, headers } = await authorizeMedia(request, deps, { ...(permission && { permission }), ...options });
      const result = await handle({
        request,
        teamId: principal.teamId,
        principal,
        actor: { teamMemberId: principal.actingMemberId },
        param: (name) => request.params[name] ?? '',
        body: () => request.body.json(maxJsonBodyBytes),
      });
      return { ...result, headers: { ...result.headers, ...headers } };
    }) satisfies Handler,
  });
}

/** The caller as services see it: the actor for the log and the key's permissions (what it may grant). */
export function callerOf(call: TeamCall): Caller {
  return { ...call.actor, permissions: call.principal.permissions };
}
