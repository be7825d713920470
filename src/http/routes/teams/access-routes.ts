import { Permission } from '../../../auth/permissions.ts';
import type { AccessAssignmentService } from '../../../domain/accesses/access-assignment.service.ts';
import type { TeamAccessService } from '../../../domain/accesses/team-access.service.ts';
import { readPaging } from '../../paging.ts';
import { json, noContent, type Route } from '../../types.ts';
import { callerOf, type TeamRoute } from '../route-builder.ts';

/** Accesses (spec 2.16) and their assignments: team.accesses.view to read (a member reads its own), team.accesses.manage for the rest. */
export function accessRoutes(route: TeamRoute, accesses: TeamAccessService, assignments: AccessAssignmentService): Route[] {
  const base = '/accesses/:accessId';
  return [
    route('GET', '/accesses', Permission.accessesView, async (call) => json(200, await accesses.list(call.teamId, readPaging(call.request)))),
    route('POST', '/accesses', Permission.accessesManage, async (call) => json(201, await accesses.create(call.teamId, await call.body(), call.actor))),
    route('GET', base, Permission.accessesView, async (call) => json(200, await accesses.get(call.teamId, call.param('accessId')))),
    route('PATCH', base, Permission.accessesManage, async (call) =>
      json(200, await accesses.update(call.teamId, call.param('accessId'), await call.body(), call.actor))),
    route('DELETE', base, Permission.accessesManage, async (call) => {
      await accesses.delete(call.teamId, call.param('accessId'), call.actor);
      return noContent();
    }),
    route('POST', `${base}/assignments`, Permission.accessesManage, async (call) =>
      json(201, await assignments.assignMember(call.teamId, call.param('accessId'), await call.body(), call.actor))),
    route('DELETE', `${base}/assignments/:assignmentId`, Permission.accessesManage, async (call) => {
      await assignments.unassign('member', call.teamId, call.param('accessId'), call.param('assignmentId'), call.actor);
      return noContent();
    }),
    route('POST', `${base}/group-assignments`, Permission.accessesManage, async (call) =>
      json(201, await assignments.assignGroup(call.teamId, call.param('accessId'), await call.body(), call.actor))),
    route('DELETE', `${base}/group-assignments/:assignmentId`, Permission.accessesManage, async (call) => {
      await assignments.unassign('group', call.teamId, call.param('accessId'), call.param('assignmentId'), call.actor);
      return noContent();
    }),
    route('GET', '/members/:memberId/accesses', null, async (call) => json(200, await assignments.ofMember(call.teamId, call.param('memberId'), callerOf(call)))),
  ];
}
