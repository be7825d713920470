import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { Permission } from '../../auth/permissions.ts';
import { forbidden, notFound } from '../../errors/errors.ts';
import type { Actor } from '../actor.ts';
import { futureTimestamp } from '../future-timestamp.ts';
import type { Caller } from '../members/member-admin.service.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import type { Paging } from '../paging.ts';
import { LogAction, recordTeamLog } from '../team-logs/team-log.service.ts';
import { Team } from '../teams/team.entity.ts';
import { isUuid, parseInput, uuid } from '../validation.ts';
import { PenaltyPoint } from './penalty-point.entity.ts';

export const MAX_POINTS = 1000;

export const givePenaltyPointsSchema = z.strictObject({
  points: z.int().min(1).max(MAX_POINTS).optional().meta({ description: 'Default 1.' }),
  message: z.string().trim().min(1).max(2000),
  expiresAt: futureTimestamp.meta({ description: 'When the points stop counting: in the future, at most ten years ahead.' }),
});

export const memberPenaltyFilterSchema = z.strictObject({
  includeExpired: z.enum(['true', 'false']).optional().meta({ description: 'Also the expired points (default false).' }),
});
export const penaltyFilterSchema = memberPenaltyFilterSchema.extend({ teamMemberId: uuid.optional().meta({ description: 'Only the points of this member.' }) });

export interface PenaltyFilters {
  teamMemberId?: string;
  includeExpired: boolean;
}

/** The filters of the team's list (`forMember` false) or of one member's list (no teamMemberId there). */
export function parsePenaltyFilters(query: URLSearchParams, forMember = false): PenaltyFilters {
  const values = Object.fromEntries([...query.entries()].filter(([key]) => key !== 'pageNumber' && key !== 'pageSize'));
  const parsed: { includeExpired?: string; teamMemberId?: string } = parseInput(forMember ? memberPenaltyFilterSchema : penaltyFilterSchema, values);
  return { ...(parsed.teamMemberId && { teamMemberId: parsed.teamMemberId.toLowerCase() }), includeExpired: parsed.includeExpired === 'true' };
}

function pointView(point: PenaltyPoint) {
  return {
    id: point.id, teamId: point.team.id, teamMemberId: point.teamMember.id, committerId: point.committer?.id ?? null,
    createdAt: point.createdAt.toISOString(), expiresAt: point.expiresAt.toISOString(), message: point.message, points: point.points,
  };
}

/**
 * Penalty points (spec 2.15): a member holding team.penalties.manage gives points to another
 * member, never to itself. They count toward the member's current total until expiresAt; the
 * total is summed at read time, so no job expires anything and every instance agrees.
 */
export class PenaltyPointService {
  private readonly orm: MikroORM;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  async give(teamId: string, memberId: string, input: unknown, actor: Actor) {
    const body = parseInput(givePenaltyPointsSchema, input);
    return this.orm.em.fork().transactional(async (em) => {
      const member = isUuid(memberId) ? await em.findOne(TeamMember, { id: memberId.toLowerCase(), team: teamId, leftTeamAt: null }) : null;
      if (!member) throw notFound('team member', memberId);
      if (member.id === actor.teamMemberId) throw forbidden('A member cannot give penalty points to itself', 'teamMemberId');
      const point = em.create(PenaltyPoint, {
        team: em.getReference(Team, teamId), teamMember: member, points: body.points ?? 1, message: body.message, expiresAt: new Date(body.expiresAt),
        committer: actor.teamMemberId ? em.getReference(TeamMember, actor.teamMemberId) : null,
      });
      recordTeamLog(em, {
        teamId, action: LogAction.penaltyPointCreated, teamMemberId: actor.teamMemberId, targetTeamMemberId: member.id, targetIdentifier: point.id,
        data: { points: point.points, expiresAt: point.expiresAt.toISOString() },
      });
      await em.flush();
      return pointView(point);
    });
  }

  /** The team's points, newest first (unexpired only unless asked). */
  async list(teamId: string, filters: PenaltyFilters, paging: Paging) {
    const em = this.orm.em.fork();
    const [points, count] = await em.findAndCount(PenaltyPoint, this.where(teamId, filters), {
      orderBy: [{ createdAt: 'desc' }, { id: 'asc' }], limit: paging.pageSize, offset: (paging.pageNumber - 1) * paging.pageSize,
    });
    return { data: points.map(pointView), count };
  }

  /** One member's points with its current total (unexpired points only, whatever the filter): team.penalties.view, or the member itself. */
  async listOfMember(teamId: string, memberId: string, filters: PenaltyFilters, paging: Paging, caller: Caller) {
    const em = this.orm.em.fork();
    const member = isUuid(memberId) ? await em.findOne(TeamMember, { id: memberId.toLowerCase(), team: teamId }) : null;
    if (!member) throw notFound('team member', memberId);
    if (member.id !== caller.teamMemberId && !caller.permissions.has(Permission.penaltiesView)) {
      throw forbidden(`Missing permission ${Permission.penaltiesView}`, Permission.penaltiesView);
    }
    const page = await this.list(teamId, { ...filters, teamMemberId: member.id }, paging);
    return { ...page, totalPoints: await this.currentTotal(em, member.id) };
  }

  async delete(teamId: string, pointId: string, actor: Actor): Promise<void> {
    await this.orm.em.fork().transactional(async (em) => {
      const point = isUuid(pointId) ? await em.findOne(PenaltyPoint, { id: pointId.toLowerCase(), team: teamId }) : null;
      if (!point) throw notFound('penalty point', pointId);
      recordTeamLog(em, {
        teamId, action: LogAction.penaltyPointDeleted, teamMemberId: actor.teamMemberId, targetTeamMemberId: point.teamMember.id, targetIdentifier: point.id,
        data: { points: point.points },
      });
      em.remove(point);
      await em.flush();
    });
  }

  private where(teamId: string, filters: PenaltyFilters) {
    return {
      team: teamId,
      ...(filters.teamMemberId && { teamMember: filters.teamMemberId }),
      ...(!filters.includeExpired && { expiresAt: { $gt: new Date() } }),
    };
  }

  private async currentTotal(em: EntityManager, memberId: string): Promise<number> {
    const [row] = await em.execute<{ total: string }[]>(
      'select coalesce(sum(points), 0) as total from penalty_point where team_member_id = ? and expires_at > ?', [memberId, new Date()]);
    return Number(row?.total ?? 0);
  }
}
