import type { MikroORM } from '@mikro-orm/postgresql';
import { LockMode } from '@mikro-orm/core';
import { z } from 'zod';
import { badRequest } from '../../errors/errors.ts';
import type { Actor } from '../actor.ts';
import { LogAction, recordTeamLog } from '../team-logs/team-log.service.ts';
import { Team } from '../teams/team.entity.ts';
import { parseInput } from '../validation.ts';
import { TEAM_MODULES, TeamModule } from './team-module.entity.ts';

export const bulkModuleUpdateSchema = z.strictObject({
  updates: z
    .array(z.strictObject({ moduleId: z.enum(TEAM_MODULES, { message: `must be one of ${TEAM_MODULES.join(', ')}` }), active: z.boolean() }))
    .min(1)
    .max(TEAM_MODULES.length),
});

function moduleView(module: TeamModule) {
  return {
    id: module.id,
    teamId: module.team.id,
    moduleId: module.moduleId,
    active: module.active,
    createdAt: module.createdAt.toISOString(),
    updatedAt: module.updatedAt.toISOString(),
    settings: module.settings ?? null,
  };
}

/** The team's modules (spec 2.17). */
export class TeamModuleService {
  private readonly orm: MikroORM;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  async list(teamId: string) {
    const modules = await this.orm.em.fork().find(TeamModule, { team: teamId }, { orderBy: { moduleId: 'asc' } });
    return modules.map(moduleView);
  }

  /** Switches modules on and off; each real change is logged as MODULE_ACTIVATED or MODULE_DEACTIVATED. */
  async update(teamId: string, input: unknown, actor: Actor) {
    const { updates } = parseInput(bulkModuleUpdateSchema, input);
    const seen = new Set<string>();
    for (const update of updates) {
      if (seen.has(update.moduleId)) throw badRequest(`Invalid updates: ${update.moduleId} is named twice`, update.moduleId);
      seen.add(update.moduleId);
    }
    return this.orm.em.fork().transactional(async (em) => {
      // The team row lock serialises concurrent updates, so two first switches cannot both insert.
      await em.findOneOrFail(Team, { id: teamId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      const existing = new Map((await em.find(TeamModule, { team: teamId })).map((module) => [module.moduleId, module]));
      for (const { moduleId, active } of updates) {
        const module = existing.get(moduleId);
        if (module?.active === active) continue;
        if (module) module.active = active;
        else existing.set(moduleId, em.create(TeamModule, { team: teamId, moduleId, active, settings: null }));
        const isChange = module !== undefined || active;
        if (isChange) {
          recordTeamLog(em, { teamId, action: active ? LogAction.moduleActivated : LogAction.moduleDeactivated, teamMemberId: actor.teamMemberId, targetIdentifier: moduleId });
        }
      }
      await em.flush();
      return [...existing.values()].sort((a, b) => a.moduleId.localeCompare(b.moduleId)).map(moduleView);
    });
  }
}
