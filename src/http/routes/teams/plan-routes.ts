import type { PlanQueryService } from '../../../domain/plans/plan-query.service.ts';
import type { SubscriptionService } from '../../../domain/subscriptions/subscription.service.ts';
import { json, type Route } from '../../types.ts';
import type { PublicRoute, TeamRoute } from '../route-builder.ts';

/** Plans and subscriptions (spec 2.12, 2.14): the public list needs no key; a team's plan, limits and subscriptions need any full key of the team. */
export function planRoutes(route: TeamRoute, publicRoute: PublicRoute, plans: PlanQueryService, subscriptions: SubscriptionService): Route[] {
  return [
    publicRoute('GET', '/v1/plans', async () => json(200, await plans.listPublic())),
    route('GET', '/plan', null, async (call) => json(200, await subscriptions.teamPlan(call.teamId))),
    route('GET', '/subscriptions', null, async (call) => json(200, await subscriptions.list(call.teamId))),
  ];
}
