import { Permission } from '../../../auth/permissions.ts';
import type { TeamModuleService } from '../../../domain/modules/team-module.service.ts';
import { json, type Route } from '../../types.ts';
import type { TeamRoute } from '../route-builder.ts';

/** The team's modules (spec 2.17): any full key reads them; switching needs team.modules.manage. */
export function moduleRoutes(route: TeamRoute, modules: TeamModuleService): Route[] {
  return [
    route('GET', '/modules', null, async (call) => json(200, await modules.list(call.teamId))),
    route('PATCH', '/modules', Permission.modulesManage, async (call) => json(200, await modules.update(call.teamId, await call.body(), call.actor))),
  ];
}
