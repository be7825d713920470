import type { FailureThrottle } from '../../../auth/failure-throttle.ts';
import type { AutomationService } from '../../../domain/automations/automation.service.ts';
import { requireOperator } from '../../guards.ts';
import type { Route } from '../../types.ts';
import { automationRouteTable, type AutomationAuthorizer } from '../automations/automation-routes.ts';

export interface AutomationAdminRouteDeps {
  authSecret: string;
  /** Wrong authSecret values count here per client address (429 past the budget). */
  authFailures: FailureThrottle;
  maxJsonBodyBytes: number;
  automations: AutomationService;
}

/** Operator routes: the team routes' table under `/v1/admin/teams/{teamId}/automations`, behind `authSecret`. */
export function automationAdminRoutes(deps: AutomationAdminRouteDeps): Route[] {
  const authorize: AutomationAuthorizer = async (request) => {
    await requireOperator(request, deps.authSecret, deps.authFailures);
    return { teamId: request.params['teamId'] ?? '', actor: { teamMemberId: null }, headers: {} };
  };
  return automationRouteTable('/v1/admin/teams/:teamId/automations', deps.automations, authorize, deps.maxJsonBodyBytes);
}
