import { Permission } from '../../../auth/permissions.ts';
import type { DiscordStatusService } from '../../../domain/members/discord-status.service.ts';
import { json, type Route } from '../../types.ts';
import type { TeamRoute } from '../route-builder.ts';

/** A member's Discord status (spec 2.8): team.members.view, as the member itself. */
export function discordStatusRoutes(route: TeamRoute, statuses: DiscordStatusService): Route[] {
  return [
    route('GET', '/members/:memberId/discord', Permission.membersView, async (call) => json(200, await statuses.get(call.teamId, call.param('memberId')))),
  ];
}
