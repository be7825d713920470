import type { Config } from '../../../config/config.ts';
import { Permission } from '../../../auth/permissions.ts';
import type { LogoffCaller, LogoffService } from '../../../domain/logoffs/logoff.service.ts';
import { parseLogoffFilters } from '../../../domain/logoffs/logoff.service.ts';
import { parseMeetingFilters, type MeetingService } from '../../../domain/meetings/meeting.service.ts';
import type { MeetingTransition } from '../../../domain/meetings/meeting-states.ts';
import { readPaging } from '../../paging.ts';
import { json, noContent, type Route } from '../../types.ts';
import { teamRouteBuilder, type TeamCall, type TeamRouteDeps } from '../route-builder.ts';

export interface MeetingRouteDeps extends TeamRouteDeps {
  meetings: MeetingService;
  logoffs: LogoffService;
}

const TRANSITIONS: MeetingTransition[] = ['start', 'end', 'lock', 'cancel'];

/** The logoff caller: the acting member, and whether it holds team.logoffs.manage. */
const logoffCaller = (call: TeamCall): LogoffCaller => ({ ...call.actor, managesAll: call.principal.permissions.has(Permission.logoffsManage) });

/**
 * Meetings and logoffs (spec 2.15; docs/workspace.md "Meetings and logoffs") under
 * /v1/teams/{teamId}: team.meetings.view reads meetings, team.meetings.manage changes them;
 * any full key files, sees and deletes its own logoffs, team.logoffs.manage everyone's.
 */
export function meetingRoutes(deps: MeetingRouteDeps, config: Pick<Config, 'maxJsonBodyBytes'>): Route[] {
  const route = teamRouteBuilder(deps, config.maxJsonBodyBytes);
  const { meetings, logoffs } = deps;
  return [
    route('GET', '/meetings', Permission.meetingsView, async (call) =>
      json(200, await meetings.list(call.teamId, parseMeetingFilters(call.request.query), readPaging(call.request)))),
    route('POST', '/meetings', Permission.meetingsManage, async (call) => json(201, await meetings.create(call.teamId, await call.body(), call.actor))),
    route('GET', '/meetings/:meetingId', Permission.meetingsView, async (call) => json(200, await meetings.get(call.teamId, call.param('meetingId')))),
    route('PATCH', '/meetings/:meetingId', Permission.meetingsManage, async (call) =>
      json(200, await meetings.update(call.teamId, call.param('meetingId'), await call.body()))),
    route('DELETE', '/meetings/:meetingId', Permission.meetingsManage, async (call) => {
      await meetings.delete(call.teamId, call.param('meetingId'));
      return noContent();
    }),
    ...TRANSITIONS.map((transition) => route('POST', `/meetings/:meetingId/${transition}`, Permission.meetingsManage, async (call) =>
      json(200, await meetings.transition(call.teamId, call.param('meetingId'), transition)))),

    route('GET', '/logoffs', null, async (call) =>
      json(200, await logoffs.list(call.teamId, logoffCaller(call), parseLogoffFilters(call.request.query), readPaging(call.request)))),
    route('POST', '/logoffs', null, async (call) => json(201, await logoffs.create(call.teamId, await call.body(), logoffCaller(call)))),
    route('GET', '/logoffs/:logoffId', null, async (call) => json(200, await logoffs.get(call.teamId, call.param('logoffId'), logoffCaller(call)))),
    route('DELETE', '/logoffs/:logoffId', null, async (call) => {
      await logoffs.delete(call.teamId, call.param('logoffId'), logoffCaller(call));
      return noContent();
    }),
  ];
}
