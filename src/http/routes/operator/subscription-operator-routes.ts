import type { SubscriptionService } from '../../../domain/subscriptions/subscription.service.ts';
import { json, type Route } from '../../types.ts';
import { operatorRouteBuilder, type OperatorRouteDeps } from '../route-builder.ts';

export interface SubscriptionOperatorRouteDeps extends OperatorRouteDeps {
  maxJsonBodyBytes: number;
  subscriptions: SubscriptionService;
}

/** Operator routes that set a team's plan and subscription as data (no payment provider; docs/team-admin.md). */
export function subscriptionOperatorRoutes(deps: SubscriptionOperatorRouteDeps): Route[] {
  const route = operatorRouteBuilder(deps, deps.maxJsonBodyBytes);
  return [
    route('PUT', '/v1/admin/teams/:teamId/plan', async (call) => json(200, await deps.subscriptions.setPlan(call.param('teamId'), await call.body()))),
    route('PUT', '/v1/admin/teams/:teamId/subscription', async (call) => json(200, await deps.subscriptions.setSubscription(call.param('teamId'), await call.body()))),
  ];
}
