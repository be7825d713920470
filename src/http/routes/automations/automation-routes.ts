import type { Services } from '../../../app.ts';
import { Permission } from '../../../auth/permissions.ts';
import { parseDeliveryFilters, type Actor, type AutomationService } from '../../../domain/automations/automation.service.ts';
import { authorizeMedia } from '../../guards.ts';
import { readPaging } from '../../paging.ts';
import { json, noContent, type Handler, type HttpRequest, type HttpResult, type Route } from '../../types.ts';

/** What a route handler knows once the caller is authorised for the team in the path. */
export interface AutomationCall {
  request: HttpRequest;
  teamId: string;
  actor: Actor;
  /** Headers for the answer (the team key's RateLimit headers). */
  headers: Record<string, string>;
}

/** Authorises the caller for the `:teamId` of the path (team key or operator secret). */
export type AutomationAuthorizer = (request: HttpRequest) => Promise<Omit<AutomationCall, 'request'>>;

/**
 * The automation routes under `base` (which holds `:teamId`), shared by the
 * team routes and the operator routes; only the authorisation differs.
 */
export function automationRouteTable(base: string, automations: AutomationService, authorize: AutomationAuthorizer, maxJsonBodyBytes: number): Route[] {
  const route = (method: Route['method'], path: string, handle: (call: AutomationCall) => Promise<HttpResult>): Route => ({
    method,
    pattern: `${base}${path}`,
    handler: (async (request) => handle({ request, ...(await authorize(request)) })) satisfies Handler,
  });
  const param = (call: AutomationCall, name: string) => call.request.params[name] ?? '';
  const body = (call: AutomationCall) => call.request.body.json(maxJsonBodyBytes);

  return [
    route('GET', '', async (call) => json(200, await automations.list(call.teamId), call.headers)),
    route('POST', '', async (call) => json(201, await automations.create(call.teamId, await body(call), call.actor), call.headers)),
    route('GET', '/:automationId', async (call) => json(200, await automations.get(call.teamId, param(call, 'automationId')), call.headers)),
    route('PATCH', '/:automationId', async (call) =>
      json(200, await automations.update(call.teamId, param(call, 'automationId'), await body(call), call.actor), call.headers)),
    route('DELETE', '/:automationId', async (call) => {
      await automations.delete(call.teamId, param(call, 'automationId'), call.actor);
      return { ...noContent(), headers: call.headers };
    }),
    route('POST', '/:automationId/rotate-secret', async (call) =>
      json(200, await automations.rotateSecret(call.teamId, param(call, 'automationId'), call.actor), call.headers)),
    route('GET', '/:automationId/deliveries', async (call) => {
      const paging = readPaging(call.request);
      const filters = parseDeliveryFilters(call.request.query);
      return json(200, await automations.listDeliveries(call.teamId, param(call, 'automationId'), paging, filters), call.headers);
    }),
    route('POST', '/:automationId/deliveries/retry-failed', async (call) =>
      json(200, await automations.retryFailed(call.teamId, param(call, 'automationId')), call.headers)),
    route('POST', '/:automationId/deliveries/:deliveryId/retry', async (call) =>
      json(200, await automations.retryDelivery(call.teamId, param(call, 'automationId'), param(call, 'deliveryId')), call.headers)),
  ];
}

/**
 * Team routes: `/v1/teams/{teamId}/automations`, with a team API key whose
 * member has `team.automations.manage` (keys narrowed to a scope get 403; a key
 * of another team 401, as on the media routes).
 */
export function automationRoutes(services: Pick<Services, 'automations' | 'authenticator' | 'rateLimiter'>, config: { maxJsonBodyBytes: number }): Route[] {
  const authorize: AutomationAuthorizer = async (request) => {
    const { principal, headers } = await authorizeMedia(request, services, { permission: Permission.automationsManage });
    return { teamId: principal.teamId, actor: { teamMemberId: principal.actingMemberId }, headers };
  };
  return automationRouteTable('/v1/teams/:teamId/automations', services.automations, authorize, config.maxJsonBodyBytes);
}
