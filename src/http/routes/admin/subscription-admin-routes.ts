import type { FailureThrottle } from '../../../auth/failure-throttle.ts';
import type { SubscriptionService } from '../../../domain/subscriptions/subscription.service.ts';
import { requireOperator } from '../../guards.ts';
import { json, type Handler, type HttpRequest, type Route } from '../../types.ts';

export interface SubscriptionAdminRouteDeps {
  authSecret: string;
  authFailures: FailureThrottle;
  maxJsonBodyBytes: number;
  subscriptions: SubscriptionService;
}

/** Operator routes that set a team's plan and subscription as data (no payment provider; docs/team-admin.md). */
export function subscriptionAdminRoutes(deps: SubscriptionAdminRouteDeps): Route[] {
  const operator = (handler: (teamId: string, body: unknown) => Promise<unknown>): Handler => async (request: HttpRequest) => {
    await requireOperator(request, deps.authSecret, deps.authFailures);
    return json(200, await handler(request.params['teamId'] ?? '', await request.body.json(deps.maxJsonBodyBytes)));
  };
  return [
    { method: 'PUT', pattern: '/v1/admin/teams/:teamId/plan', handler: operator((teamId, body) => deps.subscriptions.setPlan(teamId, body)) },
    { method: 'PUT', pattern: '/v1/admin/teams/:teamId/subscription', handler: operator((teamId, body) => deps.subscriptions.setSubscription(teamId, body)) },
  ];
}
