import type { MikroORM } from '@mikro-orm/postgresql';
import { notFound } from '../../errors/errors.ts';
import { effectiveLimits } from '../teams/team-limits.ts';
import { Team } from '../teams/team.entity.ts';
import { isUuid } from '../validation.ts';
import { planView } from '../views.ts';
import { Plan } from './plan.entity.ts';

/** Plans as clients read them (spec 2.12): the public list, and one team's plan with its effective limits. */
export class PlanQueryService {
  private readonly orm: MikroORM;

  constructor(orm: MikroORM) {
    this.orm = orm;
  }

  /** The public plans by position, with their limits and prices. */
  async listPublic() {
    const plans = await this.orm.em.fork().find(Plan, { isPublic: true }, { orderBy: [{ position: 'asc' }, { level: 'asc' }, { slug: 'asc' }] });
    return plans.map(planView);
  }

  /** The team's plan, its own overrides and the effective limits (plan, then overrides; null is unlimited). */
  async forTeam(teamId: string) {
    const team = isUuid(teamId) ? await this.orm.em.fork().findOne(Team, { id: teamId }, { populate: ['plan'] }) : null;
    if (!team) throw notFound('team', teamId);
    return {
      plan: team.plan ? planView(team.plan) : null,
      overrides: team.limitOverrides,
      limits: effectiveLimits(team.plan?.limits, team.limitOverrides),
    };
  }
}
