import type { AutomationService } from '../../../domain/automations/automation.service.ts';
import type { Route } from '../../types.ts';
import { automationRouteTable } from '../automations/automation-routes.ts';
import { operatorRouteBuilder, type OperatorRouteDeps } from '../route-builder.ts';

export interface AutomationOperatorRouteDeps extends OperatorRouteDeps {
  maxJsonBodyBytes: number;
  automations: AutomationService;
}

const BASE = '/v1/admin/teams/:teamId/automations';

/** Operator routes: the team routes' table under `/v1/admin/teams/{teamId}/automations`, behind `authSecret`. */
export function automationOperatorRoutes(deps: AutomationOperatorRouteDeps): Route[] {
  const operatorRoute = operatorRouteBuilder(deps, deps.maxJsonBodyBytes);
  return automationRouteTable(
    (method, path, handle) => operatorRoute(method, `${BASE}${path}`, (call) => handle({ ...call, teamId: call.param('teamId'), actor: { teamMemberId: null } })),
    deps.automations,
  );
}
