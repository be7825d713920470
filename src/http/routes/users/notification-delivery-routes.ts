import { listDeliveries } from '../../../domain/notifications/delivery-list.ts';
import type { NotificationDeliveries } from '../../../domain/notifications/notification-deliveries.ts';
import { json, type Route } from '../../types.ts';
import { userRouteBuilder, type UserRouteDeps } from '../route-builder.ts';

export interface NotificationDeliveryRouteDeps extends UserRouteDeps {
  notificationDeliveries: NotificationDeliveries;
}

/** The signed-in user's notification deliveries (spec 2.9), newest first, a cursor page at a time. */
export function notificationDeliveryRoutes(deps: NotificationDeliveryRouteDeps): Route[] {
  const route = userRouteBuilder(deps, 0);
  return [
    route('GET', '/v1/users/me/notifications/deliveries', async (call) =>
      json(200, await listDeliveries(deps.notificationDeliveries, call.userId, call.request.query))),
  ];
}
