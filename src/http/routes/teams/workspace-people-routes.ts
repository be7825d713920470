import type { Config } from '../../../config/config.ts';
import type { AccessAssignmentService } from '../../../domain/accesses/access-assignment.service.ts';
import type { TeamAccessService } from '../../../domain/accesses/team-access.service.ts';
import type { PenaltyPointService } from '../../../domain/penalty-points/penalty-point.service.ts';
import type { TeamTagService } from '../../../domain/team-tags/team-tag.service.ts';
import type { WorryBoxService } from '../../../domain/worry-box/worry-box.service.ts';
import type { Route } from '../../types.ts';
import { teamRouteBuilder, type TeamRouteDeps } from '../route-builder.ts';
import { accessRoutes } from './access-routes.ts';
import { penaltyPointRoutes } from './penalty-point-routes.ts';
import { teamTagRoutes } from './team-tag-routes.ts';
import { worryBoxRoutes } from './worry-box-routes.ts';

export interface WorkspacePeopleRouteDeps extends TeamRouteDeps {
  penaltyPoints: PenaltyPointService;
  worryBox: WorryBoxService;
  teamTags: TeamTagService;
  teamAccesses: TeamAccessService;
  accessAssignments: AccessAssignmentService;
}

/** Penalty points, the worry box, team tags and accesses under /v1/teams/{teamId} (docs/workspace.md). */
export function workspacePeopleRoutes(deps: WorkspacePeopleRouteDeps, config: Pick<Config, 'maxJsonBodyBytes'>): Route[] {
  const route = teamRouteBuilder(deps, config.maxJsonBodyBytes);
  return [
    ...penaltyPointRoutes(route, deps.penaltyPoints),
    ...worryBoxRoutes(route, deps.worryBox),
    ...teamTagRoutes(route, deps.teamTags),
    ...accessRoutes(route, deps.teamAccesses, deps.accessAssignments),
  ];
}
