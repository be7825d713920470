import type { Services } from '../../../app.ts';
import type { Route } from '../../types.ts';
import { apiKeyRoutes } from './api-key-routes.ts';
import { groupRoutes } from './group-routes.ts';
import { inviteAcceptRoute, inviteRoutes } from './invite-routes.ts';
import { memberRoutes } from './member-routes.ts';
import { moduleRoutes } from './module-routes.ts';
import { planRoutes } from './plan-routes.ts';
import { teamLogRoutes } from './team-log-routes.ts';
import { teamRouteBuilder } from './team-route.ts';
import { teamSettingsRoutes } from './team-settings-routes.ts';

/** Everything a team needs to run itself with its own key, under /v1/teams/{teamId} (docs/team-admin.md). */
export function teamAdminRoutes(
  services: Pick<Services, 'orm' | 'authenticator' | 'rateLimiter' | 'authFailures' | 'subscriptions' | 'invites' | 'memberAdmin' | 'memberNotes' | 'teamMe'
    | 'teamSettings' | 'teamLogs' | 'groupAdmin' | 'teamModules' | 'plans' | 'apiKeyAdmin'>,
  config: { maxJsonBodyBytes: number; authSecret: string },
): Route[] {
  const route = teamRouteBuilder(services, config.maxJsonBodyBytes);
  const { invites, memberAdmin: members } = services;
  return [
    ...inviteRoutes(route, invites),
    inviteAcceptRoute(invites, { ...config, authFailures: services.authFailures }),
    ...teamSettingsRoutes(route, services.teamSettings),
    ...teamLogRoutes(route, services.teamLogs),
    ...memberRoutes(route, members, services.memberNotes, services.teamMe),
    ...groupRoutes(route, services.groupAdmin),
    ...moduleRoutes(route, services.teamModules),
    ...planRoutes(route, services.plans, services.subscriptions),
    ...apiKeyRoutes(route, services.apiKeyAdmin),
  ];
}
