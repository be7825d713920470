import type { AccountService } from '../../../domain/accounts/account.service.ts';
import type { InviteService } from '../../../domain/invites/invite.service.ts';
import { json, noContent, type Route } from '../../types.ts';
import { userRouteBuilder, type UserRouteDeps } from '../route-builder.ts';

export interface LinkedAccountRouteDeps extends UserRouteDeps {
  accounts: AccountService;
  invites: InviteService;
  maxJsonBodyBytes: number;
}

/** The signed-in user's linked accounts (spec 2.6) and its invites (spec 2.11 join info, accepting). */
export function accountRoutes(deps: LinkedAccountRouteDeps): Route[] {
  const route = userRouteBuilder(deps, deps.maxJsonBodyBytes);
  return [
    route('GET', '/v1/users/me/accounts', async (call) => json(200, await deps.accounts.list(call.userId))),
    route('POST', '/v1/users/me/accounts', async (call) => {
      const { created, account } = await deps.accounts.linkManual(call.userId, await call.body());
      return json(created ? 201 : 200, account);
    }),
    route('DELETE', '/v1/users/me/accounts/:providerId', async (call) => {
      await deps.accounts.unlink(call.userId, call.param('providerId'));
      return noContent();
    }),
    route('GET', '/v1/invites/:inviteId', async (call) => json(200, await deps.invites.joinInfo(call.param('inviteId'), call.userId))),
    route('POST', '/v1/invites/:inviteId/accept', async (call) => json(201, await deps.invites.acceptAsUser(call.param('inviteId'), call.userId, await call.body()))),
  ];
}
