import { Permission } from '../../../auth/permissions.ts';
import type { GroupAdminService } from '../../../domain/groups/group-admin.service.ts';
import { json, noContent, type Route } from '../../types.ts';
import { callerOf, type TeamRoute } from '../route-builder.ts';

/** Groups of the team (spec 2.13): team.members.view to list, team.groups.manage for everything else. */
export function groupRoutes(route: TeamRoute, groups: GroupAdminService): Route[] {
  return [
    route('GET', '/groups', Permission.membersView, async (call) => json(200, await groups.list(call.teamId))),
    route('POST', '/groups', Permission.groupsManage, async (call) => json(201, await groups.create(call.teamId, await call.body(), callerOf(call)))),
    route('PUT', '/groups/order', Permission.groupsManage, async (call) => json(200, await groups.reorder(call.teamId, await call.body(), callerOf(call)))),
    route('PATCH', '/groups/:groupId', Permission.groupsManage, async (call) =>
      json(200, await groups.update(call.teamId, call.param('groupId'), await call.body(), callerOf(call)))),
    route('DELETE', '/groups/:groupId', Permission.groupsManage, async (call) => {
      await groups.delete(call.teamId, call.param('groupId'), callerOf(call));
      return noContent();
    }),
    route('PUT', '/groups/:groupId/members/:memberId', Permission.groupsManage, async (call) => {
      await groups.addMember(call.teamId, call.param('groupId'), call.param('memberId'), callerOf(call));
      return noContent();
    }),
    route('PUT', '/members/:memberId/groups', Permission.groupsManage, async (call) =>
      json(200, await groups.setMemberGroups(call.teamId, call.param('memberId'), await call.body(), callerOf(call)))),
    route('DELETE', '/groups/:groupId/members/:memberId', Permission.groupsManage, async (call) => {
      await groups.removeMember(call.teamId, call.param('groupId'), call.param('memberId'), callerOf(call));
      return noContent();
    }),
  ];
}
