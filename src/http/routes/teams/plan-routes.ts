import type { PlanQueryService } from '../../../domain/plans/plan-query.service.ts';
import { json, type Route } from '../../types.ts';
import type { teamRouteBuilder } from './team-route.ts';

/** Plans (spec 2.12): the public list needs no key; a team's plan and limits need any full key of the team. */
export function planRoutes(route: ReturnType<typeof teamRouteBuilder>, plans: PlanQueryService): Route[] {
  return [
    { method: 'GET', pattern: '/v1/plans', handler: async () => json(200, await plans.listPublic()) },
    route('GET', '/plan', null, async (call) => json(200, await plans.forTeam(call.teamId))),
  ];
}
