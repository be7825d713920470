import type { ApiKeyAdminService } from '../../../domain/api-keys/api-key-admin.service.ts';
import type { GroupAdminService } from '../../../domain/groups/group-admin.service.ts';
import type { InviteService } from '../../../domain/invites/invite.service.ts';
import type { MemberAdminService } from '../../../domain/members/member-admin.service.ts';
import type { MemberNoteService } from '../../../domain/members/member-note.service.ts';
import type { DiscordStatusService } from '../../../domain/members/discord-status.service.ts';
import type { TeamModuleService } from '../../../domain/modules/team-module.service.ts';
import type { PlanQueryService } from '../../../domain/plans/plan-query.service.ts';
import type { TeamLogList } from '../../../domain/team-logs/team-log-list.ts';
import type { TeamSettingsService } from '../../../domain/teams/team-settings.service.ts';
import type { TeamMeService } from '../../../domain/teams/team-me.service.ts';
import type { SubscriptionService } from '../../../domain/subscriptions/subscription.service.ts';
import type { Route } from '../../types.ts';
import { operatorRouteBuilder, publicRouteBuilder, teamRouteBuilder, type OperatorRouteDeps, type TeamRouteDeps } from '../route-builder.ts';
import { apiKeyRoutes } from './api-key-routes.ts';
import { groupRoutes } from './group-routes.ts';
import { inviteAcceptRoute, inviteRoutes } from './invite-routes.ts';
import { memberRoutes } from './member-routes.ts';
import { discordStatusRoutes } from './discord-status-routes.ts';
import { moduleRoutes } from './module-routes.ts';
import { planRoutes } from './plan-routes.ts';
import { teamLogRoutes } from './team-log-routes.ts';
import { teamSettingsRoutes } from './team-settings-routes.ts';

/** What the team administration routes need: the team guard's, the operator guard's failure budget (invite accept), and the services they build on. */
export interface TeamAdminRouteDeps extends TeamRouteDeps, Pick<OperatorRouteDeps, 'authFailures'> {
  subscriptions: SubscriptionService;
  invites: InviteService;
  memberAdmin: MemberAdminService;
  memberNotes: MemberNoteService;
  discordStatuses: DiscordStatusService;
  teamMe: TeamMeService;
  teamSettings: TeamSettingsService;
  teamLogs: TeamLogList;
  groupAdmin: GroupAdminService;
  teamModules: TeamModuleService;
  plans: PlanQueryService;
  apiKeyAdmin: ApiKeyAdminService;
}

/** Everything a team needs to run itself with its own key, under /v1/teams/{teamId} (docs/team-admin.md). */
export function teamAdminRoutes(services: TeamAdminRouteDeps, config: { maxJsonBodyBytes: number; authSecret: string }): Route[] {
  const route = teamRouteBuilder(services, config.maxJsonBodyBytes);
  const operatorRoute = operatorRouteBuilder({ authSecret: config.authSecret, authFailures: services.authFailures }, config.maxJsonBodyBytes);
  const { invites } = services;
  return [
    ...inviteRoutes(route, invites),
    inviteAcceptRoute(operatorRoute, invites),
    ...teamSettingsRoutes(route, services.teamSettings),
    ...teamLogRoutes(route, services.teamLogs),
    ...memberRoutes(route, services.memberAdmin, services.memberNotes, services.teamMe),
    ...discordStatusRoutes(route, services.discordStatuses),
    ...groupRoutes(route, services.groupAdmin),
    ...moduleRoutes(route, services.teamModules),
    ...planRoutes(route, publicRouteBuilder(), services.plans, services.subscriptions),
    ...apiKeyRoutes(route, services.apiKeyAdmin),
  ];
}
