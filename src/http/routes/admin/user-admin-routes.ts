import type { FailureThrottle } from '../../../auth/failure-throttle.ts';
import type { UserProfileService } from '../../../domain/users/user-profile.service.ts';
import { requireOperator } from '../../guards.ts';
import { json, type HttpRequest, type HttpResult, type Route } from '../../types.ts';

/** The operator's hold on users: read one, disable or enable it, set its global permissions. */
export function userAdminRoutes(deps: { profiles: UserProfileService; authSecret: string; authFailures: FailureThrottle; maxJsonBodyBytes: number }): Route[] {
  const operator = (handle: (request: HttpRequest, userId: string) => Promise<HttpResult>) => async (request: HttpRequest) => {
    await requireOperator(request, deps.authSecret, deps.authFailures);
    return handle(request, request.params['userId'] ?? '');
  };
  return [
    { method: 'GET', pattern: '/v1/admin/users/:userId', handler: operator(async (_request, userId) => json(200, await deps.profiles.get(userId))) },
    { method: 'POST', pattern: '/v1/admin/users/:userId/disable', handler: operator(async (_request, userId) => json(200, await deps.profiles.setDisabled(userId, true))) },
    { method: 'POST', pattern: '/v1/admin/users/:userId/enable', handler: operator(async (_request, userId) => json(200, await deps.profiles.setDisabled(userId, false))) },
    {
      method: 'PUT',
      pattern: '/v1/admin/users/:userId/permissions',
      handler: operator(async (request, userId) => json(200, await deps.profiles.setPermissions(userId, await request.body.json(deps.maxJsonBodyBytes)))),
    },
  ];
}
