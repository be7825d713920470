import { Permission } from '../../../auth/permissions.ts';
import type { InviteService } from '../../../domain/invites/invite.service.ts';
import { json, noContent, type Route } from '../../types.ts';
import { callerOf, type OperatorRoute, type TeamRoute } from '../route-builder.ts';

/** The team's invites (spec 2.13), all behind team.invites.manage. */
export function inviteRoutes(route: TeamRoute, invites: InviteService): Route[] {
  return [
    route('GET', '/invites', Permission.invitesManage, async (call) => json(200, await invites.list(call.teamId))),
    route('POST', '/invites', Permission.invitesManage, async (call) => json(201, await invites.create(call.teamId, await call.body(), callerOf(call)))),
    route('DELETE', '/invites', Permission.invitesManage, async (call) => json(200, await invites.clear(call.teamId, call.actor))),
    route('DELETE', '/invites/:inviteId', Permission.invitesManage, async (call) => {
      await invites.delete(call.teamId, call.param('inviteId'), call.actor);
      return noContent();
    }),
  ];
}

/** Until user sign-in exists, the operator accepts an invite on a user's behalf. */
export function inviteAcceptRoute(operatorRoute: OperatorRoute, invites: InviteService): Route {
  return operatorRoute('POST', '/v1/admin/invites/:inviteId/accept', async (call) => json(201, await invites.accept(call.param('inviteId'), await call.body())));
}
