import { Permission } from '../../../auth/permissions.ts';
import { parseDeliveryFilters, type Actor, type AutomationService } from '../../../domain/automations/automation.service.ts';
import { readPaging } from '../../paging.ts';
import { json, noContent, type HttpMethod, type HttpResult, type Route } from '../../types.ts';
import { TEAM_BASE, teamRouteBuilder, type RouteCall, type TeamRouteDeps } from '../route-builder.ts';

/** Who calls an automation route: the team of the path, and who acts for the team log. */
export interface AutomationCaller {
  teamId: string;
  actor: Actor;
}

/** Declares one automation route with its audience's guard (team key or operator secret). */
export type AutomationRoute = (method: HttpMethod, path: string, handle: (call: RouteCall<AutomationCaller>) => Promise<HttpResult>) => Route;

/**
 * The automation routes, shared by the team routes and the operator routes
 * (operator/automation-operator-routes.ts); only `route`, the audience, differs.
 */
export function automationRouteTable(route: AutomationRoute, automations: AutomationService): Route[] {
  return [
    route('GET', '', async (call) => json(200, await automations.list(call.teamId))),
    route('POST', '', async (call) => json(201, await automations.create(call.teamId, await call.body(), call.actor))),
    route('GET', '/:automationId', async (call) => json(200, await automations.get(call.teamId, call.param('automationId')))),
    route('PATCH', '/:automationId', async (call) =>
      json(200, await automations.update(call.teamId, call.param('automationId'), await call.body(), call.actor))),
    route('DELETE', '/:automationId', async (call) => {
      await automations.delete(call.teamId, call.param('automationId'), call.actor);
      return noContent();
    }),
    route('POST', '/:automationId/rotate-secret', async (call) =>
      json(200, await automations.rotateSecret(call.teamId, call.param('automationId'), call.actor))),
    route('POST', '/:automationId/test', async (call) =>
      json(201, await automations.sendTest(call.teamId, call.param('automationId')))),
    route('GET', '/:automationId/deliveries', async (call) => {
      const paging = readPaging(call.request);
      const filters = parseDeliveryFilters(call.request.query);
      return json(200, await automations.listDeliveries(call.teamId, call.param('automationId'), paging, filters));
    }),
    route('POST', '/:automationId/deliveries/retry-failed', async (call) =>
      json(200, await automations.retryFailed(call.teamId, call.param('automationId')))),
    route('POST', '/:automationId/deliveries/:deliveryId/retry', async (call) =>
      json(200, await automations.retryDelivery(call.teamId, call.param('automationId'), call.param('deliveryId')))),
  ];
}

export interface AutomationRouteDeps extends TeamRouteDeps {
  automations: AutomationService;
}

/**
 * Team routes: `/v1/teams/{teamId}/automations`, with a team API key whose
 * member has `team.automations.manage` (keys narrowed to a scope get 403; a key
 * of another team 401, as on the media routes).
 */
export function automationRoutes(deps: AutomationRouteDeps, config: { maxJsonBodyBytes: number }): Route[] {
  const teamRoute = teamRouteBuilder(deps, config.maxJsonBodyBytes, `${TEAM_BASE}/automations`);
  return automationRouteTable((method, path, handle) => teamRoute(method, path, Permission.automationsManage, handle), deps.automations);
}
