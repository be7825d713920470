import { Permission } from '../../../auth/permissions.ts';
import { parsePaging } from '../../../domain/media/media.service.ts';
import { parseTeamLogFilters, type TeamLogList } from '../../../domain/team-logs/team-log-list.ts';
import { json, type Route } from '../../types.ts';
import type { teamRouteBuilder } from './team-route.ts';

/** The team log (spec 2.19), newest first, paged by the pageNumber and pageSize headers. */
export function teamLogRoutes(route: ReturnType<typeof teamRouteBuilder>, logs: TeamLogList): Route[] {
  return [
    route('GET', '/logs', Permission.logsView, async (call) => {
      const paging = parsePaging(call.request.headers['pagenumber'], call.request.headers['pagesize']);
      return json(200, await logs.list(call.teamId, parseTeamLogFilters(call.request.query), paging));
    }),
  ];
}
