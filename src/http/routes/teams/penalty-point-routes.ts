import { Permission } from '../../../auth/permissions.ts';
import { parsePenaltyFilters, type PenaltyPointService } from '../../../domain/penalty-points/penalty-point.service.ts';
import { readPaging } from '../../paging.ts';
import { json, noContent, type Route } from '../../types.ts';
import { callerOf, type TeamRoute } from '../route-builder.ts';

/** Penalty points (spec 2.15): team.penalties.view to read everyone's (a member reads its own), team.penalties.manage to give and delete. */
export function penaltyPointRoutes(route: TeamRoute, points: PenaltyPointService): Route[] {
  return [
    route('GET', '/penalty-points', Permission.penaltiesView, async (call) =>
      json(200, await points.list(call.teamId, parsePenaltyFilters(call.request.query), readPaging(call.request)))),
    route('GET', '/members/:memberId/penalty-points', null, async (call) =>
      json(200, await points.listOfMember(call.teamId, call.param('memberId'), parsePenaltyFilters(call.request.query, true), readPaging(call.request), callerOf(call)))),
    route('POST', '/members/:memberId/penalty-points', Permission.penaltiesManage, async (call) =>
      json(201, await points.give(call.teamId, call.param('memberId'), await call.body(), call.actor))),
    route('DELETE', '/penalty-points/:pointId', Permission.penaltiesManage, async (call) => {
      await points.delete(call.teamId, call.param('pointId'), call.actor);
      return noContent();
    }),
  ];
}
