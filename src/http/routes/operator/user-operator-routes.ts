import type { UserProfileService } from '../../../domain/users/user-profile.service.ts';
import { json, type Route } from '../../types.ts';
import { operatorRouteBuilder, type OperatorRouteDeps } from '../route-builder.ts';

export interface UserOperatorRouteDeps extends OperatorRouteDeps {
  maxJsonBodyBytes: number;
  profiles: UserProfileService;
}

/** The operator's hold on users: read one, disable or enable it, set its global permissions. */
export function userOperatorRoutes(deps: UserOperatorRouteDeps): Route[] {
  const route = operatorRouteBuilder(deps, deps.maxJsonBodyBytes);
  return [
    route('GET', '/v1/admin/users/:userId', async (call) => json(200, await deps.profiles.get(call.param('userId')))),
    route('POST', '/v1/admin/users/:userId/disable', async (call) => json(200, await deps.profiles.setDisabled(call.param('userId'), true))),
    route('POST', '/v1/admin/users/:userId/enable', async (call) => json(200, await deps.profiles.setDisabled(call.param('userId'), false))),
    route('PUT', '/v1/admin/users/:userId/permissions', async (call) => json(200, await deps.profiles.setPermissions(call.param('userId'), await call.body()))),
  ];
}
