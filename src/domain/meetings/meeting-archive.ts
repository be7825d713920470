import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../../errors/errors.ts';
import { effectiveLimits } from '../teams/team-limits.ts';
import { Team } from '../teams/team.entity.ts';
import { OPEN_MEETING_STATES } from './meeting-states.ts';

/**
 * meetingArchive (a plan limit, default 1) is the number of whole months a closed meeting stays
 * readable: a FINISHED or LOCKED one from its endedAt, a CANCELLED one from its cancelledAt; null
 * keeps them readable for ever, 0 hides them as they close. It is a condition of every query, not
 * a job: the rows stay, so a plan with a longer archive shows them again (docs/workspace.md).
 */
export function archiveCutoff(months: number | null, now: Date): Date | null {
  if (months === null) return null;
  const cutoff = new Date(now);
  cutoff.setUTCMonth(cutoff.getUTCMonth() - months);
  return cutoff;
}

/** The ORM condition a meeting must meet to be readable under the cutoff. */
export function readableMeeting(cutoff: Date | null) {
  if (cutoff === null) return {};
  return { $or: [{ state: { $in: [...OPEN_MEETING_STATES] } }, { endedAt: { $gte: cutoff } }, { cancelledAt: { $gte: cutoff } }] };
}

/** The team's archive cutoff now (404 for a team that does not exist). */
export async function teamArchiveCutoff(em: EntityManager, teamId: string): Promise<Date | null> {
  const team = await em.findOne(Team, { id: teamId }, { populate: ['plan'] });
  if (!team) throw notFound('team', teamId);
  return archiveCutoff(effectiveLimits(team.plan?.limits, team.limitOverrides).meetingArchive, new Date());
}
