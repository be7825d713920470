import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound, teamLimit } from '../../errors/errors.ts';
import type { PlanLimits } from '../plans/plan-limits.ts';
import { effectiveLimits } from './team-limits.ts';
import { Team } from './team.entity.ts';

/**
 * Locks the team row (FOR NO KEY UPDATE: rows referencing the team can still be inserted by
 * others) for the rest of the caller's transaction and answers the team with its effective
 * limits. Every change that counts against a team limit takes this lock first, so concurrent
 * changes on any instance count one after another and cannot pass the limit together.
 */
export async function lockTeamForLimits(em: EntityManager, teamId: string): Promise<{ team: Team; limits: PlanLimits }> {
  const rows = await em.execute('select id from team where id = ? for no key update', [teamId]);
  if (rows.length === 0) throw notFound('team', teamId);
  const team = await em.findOneOrFail(Team, { id: teamId }, { populate: ['plan'] });
  return { team, limits: effectiveLimits(team.plan?.limits, team.limitOverrides) };
}

/** 402 error.teamLimits.<key> when `count` already reaches the numeric limit (null: unlimited). */
export function requireBelowLimit(limits: PlanLimits, key: 'maxNews' | 'maxLinks', count: number, what: string): void {
  const limit = limits[key];
  if (limit !== null && count >= limit) throw teamLimit(key, `The team has reached the limit of ${limit} ${what} (${key})`, limit);
}
