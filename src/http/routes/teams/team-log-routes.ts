import { Permission } from '../../../auth/permissions.ts';
import { parseTeamLogFilters, type TeamLogList } from '../../../domain/team-logs/team-log-list.ts';
import { readPaging } from '../../paging.ts';
import { json, type Route } from '../../types.ts';
import type { TeamRoute } from '../route-builder.ts';

/** The team log (spec 2.19), newest first, paged by readPaging (the pageNumber and pageSize headers or query parameters). */
export function teamLogRoutes(route: TeamRoute, logs: TeamLogList): Route[] {
  return [
    route('GET', '/logs', Permission.logsView, async (call) => {
      const paging = readPaging(call.request);
      return json(200, await logs.list(call.teamId, parseTeamLogFilters(call.request.query), paging));
    }),
  ];
}
