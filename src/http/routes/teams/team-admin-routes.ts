import type { MikroORM } from '@mikro-orm/postgresql';
import { ApiKeyAdminService } from '../../../domain/api-keys/api-key-admin.service.ts';
import { GroupAdminService } from '../../../domain/groups/group-admin.service.ts';
import { InviteService } from '../../../domain/invites/invite.service.ts';
import { MemberAdminService } from '../../../domain/members/member-admin.service.ts';
import { MemberNoteService } from '../../../domain/members/member-note.service.ts';
import { TeamModuleService } from '../../../domain/modules/team-module.service.ts';
import { PlanQueryService } from '../../../domain/plans/plan-query.service.ts';
import { TeamLogList } from '../../../domain/team-logs/team-log-list.ts';
import { TeamSettingsService } from '../../../domain/teams/team-settings.service.ts';
import { TeamMeService } from '../../../domain/teams/team-me.service.ts';
import type { SubscriptionService } from '../../../domain/subscriptions/subscription.service.ts';
import type { Route } from '../../types.ts';
import { operatorRouteBuilder, publicRouteBuilder, teamRouteBuilder, type OperatorRouteDeps, type TeamRouteDeps } from '../route-builder.ts';
import { apiKeyRoutes } from './api-key-routes.ts';
import { groupRoutes } from './group-routes.ts';
import { inviteAcceptRoute, inviteRoutes } from './invite-routes.ts';
import { memberRoutes } from './member-routes.ts';
import { moduleRoutes } from './module-routes.ts';
import { planRoutes } from './plan-routes.ts';
import { teamLogRoutes } from './team-log-routes.ts';
import { teamSettingsRoutes } from './team-settings-routes.ts';

/** What the team administration routes need: the team guard's, the operator guard's failure budget (invite accept), and the services they build on. */
export interface TeamAdminRouteDeps extends TeamRouteDeps, Pick<OperatorRouteDeps, 'authFailures'> {
  orm: MikroORM;
  subscriptions: SubscriptionService;
}

/** Everything a team needs to run itself with its own key, under /v1/teams/{teamId} (docs/team-admin.md). */
export function teamAdminRoutes(services: TeamAdminRouteDeps, config: { maxJsonBodyBytes: number; authSecret: string }): Route[] {
  const route = teamRouteBuilder(services, config.maxJsonBodyBytes);
  const operatorRoute = operatorRouteBuilder({ authSecret: config.authSecret, authFailures: services.authFailures }, config.maxJsonBodyBytes);
  const invites = new InviteService(services.orm, services.authenticator);
  const members = new MemberAdminService(services.orm, services.authenticator);
  return [
    ...inviteRoutes(route, invites),
    inviteAcceptRoute(operatorRoute, invites),
    ...teamSettingsRoutes(route, new TeamSettingsService(services.orm, services.authenticator)),
    ...teamLogRoutes(route, new TeamLogList(services.orm)),
    ...memberRoutes(route, members, new MemberNoteService(services.orm), new TeamMeService(services.orm, members, services.subscriptions)),
    ...groupRoutes(route, new GroupAdminService(services.orm, services.authenticator)),
    ...moduleRoutes(route, new TeamModuleService(services.orm)),
    ...planRoutes(route, publicRouteBuilder(), new PlanQueryService(services.orm), services.subscriptions),
    ...apiKeyRoutes(route, new ApiKeyAdminService(services.orm, services.authenticator)),
  ];
}
