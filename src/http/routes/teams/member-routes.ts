import { Permission } from '../../../auth/permissions.ts';
import { type MemberAdminService, parseMemberSearch } from '../../../domain/members/member-admin.service.ts';
import type { MemberNoteService } from '../../../domain/members/member-note.service.ts';
import type { TeamMeService } from '../../../domain/teams/team-me.service.ts';
import { readPaging } from '../../paging.ts';
import { json, noContent, type Route } from '../../types.ts';
import { callerOf as caller, type TeamRoute } from '../route-builder.ts';

/** Members of the team and notes about them (spec 2.13): team.members.view to read, team.members.manage to change, kick and write notes. */
export function memberRoutes(route: TeamRoute, members: MemberAdminService, notes: MemberNoteService, me: TeamMeService): Route[] {
  return [
    route('GET', '/members', Permission.membersView, async (call) => {
      const paging = readPaging(call.request);
      return json(200, await members.list(call.teamId, paging, parseMemberSearch(call.request.query)));
    }),
    route('GET', '/members/:memberId', Permission.membersView, async (call) => json(200, await members.get(call.teamId, call.param('memberId')))),
    route('PATCH', '/members/:memberId', Permission.membersManage, async (call) =>
      json(200, await members.update(call.teamId, call.param('memberId'), await call.body(), caller(call)))),
    route('DELETE', '/members/:memberId', Permission.membersManage, async (call) => {
      await members.kick(call.teamId, call.param('memberId'), caller(call));
      return noContent();
    }),
    route('POST', '/leave', null, async (call) => {
      await members.leave(call.teamId, caller(call));
      return noContent();
    }, { whileArchived: true }),
    route('GET', '/members/:memberId/notes', Permission.membersView, async (call) => json(200, await notes.list(call.teamId, call.param('memberId')))),
    route('POST', '/members/:memberId/notes', Permission.membersManage, async (call) =>
      json(201, await notes.create(call.teamId, call.param('memberId'), await call.body(), call.actor))),
    route('DELETE', '/members/:memberId/notes/:noteId', Permission.membersManage, async (call) => {
      await notes.delete(call.teamId, call.param('memberId'), call.param('noteId'), call.actor);
      return noContent();
    }),
    route('GET', '/dashboard', null, async (call) => json(200, await members.dashboard(call.teamId, call.actor))),
    route('GET', '/me', null, async (call) => json(200, await me.me(call.teamId, call.actor))),
  ];
}
