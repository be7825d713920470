import { Permission } from '../../../auth/permissions.ts';
import type { TeamSettingsService } from '../../../domain/teams/team-settings.service.ts';
import { json, type Route } from '../../types.ts';
import type { TeamRoute } from '../route-builder.ts';

/** The team itself (spec 2.11): any full key of the team reads it; changes need team.settings.manage. */
export function teamSettingsRoutes(route: TeamRoute, settings: TeamSettingsService): Route[] {
  return [
    route('GET', '', null, async (call) => json(200, await settings.get(call.teamId))),
    route('GET', '/minimal', null, async (call) => json(200, await settings.minimal(call.teamId))),
    route('GET', '/join-info', null, async (call) => json(200, await settings.joinInfo(call.teamId, call.principal.sessionId ? call.principal.memberId : null))),
    route('PATCH', '', Permission.settingsManage, async (call) => json(200, await settings.update(call.teamId, await call.body(), call.actor))),
    route('POST', '/archive', Permission.settingsManage, async (call) => json(200, await settings.setArchived(call.teamId, true, call.actor)), { whileArchived: true }),
    route('POST', '/unarchive', Permission.settingsManage, async (call) => json(200, await settings.setArchived(call.teamId, false, call.actor)), { whileArchived: true }),
  ];
}
