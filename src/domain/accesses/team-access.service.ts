import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { notFound } from '../../errors/errors.ts';
import type { Actor } from '../actor.ts';
import type { Paging } from '../paging.ts';
import { LogAction, recordTeamLog } from '../team-logs/team-log.service.ts';
import { Team } from '../teams/team.entity.ts';
import { isUuid, parseInput } from '../validation.ts';
import { activeGroupAssignments, activeMemberAssignments, type AssignmentRow, groupAssignmentView, memberAssignmentView } from './access-assignment-queries.ts';
import { TeamAccess } from './team-access.entity.ts';

export const createAccessSchema = z.strictObject({
  name: z.string().trim().min(1).max(100),
  description: z.string().max(2000).nullable().optional(),
  icon: z.string().trim().min(1).max(64).nullable().optional(),
});
export const updateAccessSchema = createAccessSchema.partial();

export function accessView(access: TeamAccess) {
  return {
    id: access.id, teamId: access.team.id, name: access.name, description: access.description ?? null, icon: access.icon ?? null,
    createdAt: access.createdAt.toISOString(), updatedAt: access.updatedAt.toISOString(),
  };
}

/**
 * Accesses (spec 2.16 TeamAccess): what the team hands out, with their assignments
 * (access-assignment.service.ts). Counts and details show only assignments in force: not expired,
 * and for a member, made since it (last) joined and while it is a member.
 */
export class TeamAccessService {
  private readonly orm: MikroORM;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  /** The accesses by name, each with its count of direct and of group assignments in force. */
  async list(teamId: string, paging: Paging) {
    const em = this.orm.em.fork();
    const now = new Date();
    const [accesses, count] = await em.findAndCount(TeamAccess, { team: teamId }, {
      orderBy: [{ name: 'asc' }, { id: 'asc' }], limit: paging.pageSize, offset: (paging.pageNumber - 1) * paging.pageSize,
    });
    const ids = accesses.map((access) => access.id);
    const counts = new Map<string, { direct: number; group: number }>(ids.map((id) => [id, { direct: 0, group: 0 }]));
    if (ids.length > 0) {
      const marks = ids.map(() => '?').join(', ');
      const rows = await em.execute<{ access_id: string; source: 'direct' | 'group'; n: string }[]>(
        `select a.access_id, 'direct' as source, count(*) as n from team_access_assignment a join team_member m on m.id = a.team_member_id
          where a.access_id in (${marks}) and ${activeMemberAssignments('a', 'm')} group by a.access_id
         union all
         select g.access_id, 'group' as source, count(*) as n from team_access_group_assignment g
          where g.access_id in (${marks}) and ${activeGroupAssignments('g')} group by g.access_id`,
        [...ids, now, ...ids, now]);
      for (const row of rows) counts.get(row.access_id)![row.source] = Number(row.n);
    }
    return {
      data: accesses.map((access) => ({ ...accessView(access), assignmentCount: counts.get(access.id)!.direct, groupAssignmentCount: counts.get(access.id)!.group })),
      count,
    };
  }

  /** The access with its assignments in force, oldest first. */
  async get(teamId: string, accessId: string) {
    const em = this.orm.em.fork();
    const access = await this.access(em, teamId, accessId);
    const now = new Date();
    const [direct, groups] = await Promise.all([
      em.execute<AssignmentRow[]>(`select a.* from team_access_assignment a join team_member m on m.id = a.team_member_id
        where a.access_id = ? and ${activeMemberAssignments('a', 'm')} order by a.assigned_at, a.id`, [access.id, now]),
      em.execute<AssignmentRow[]>(`select g.* from team_access_group_assignment g where g.access_id = ? and ${activeGroupAssignments('g')} order by g.assigned_at, g.id`,
        [access.id, now]),
    ]);
    return {
      ...accessView(access),
      assignments: await memberAssignmentView(em, direct),
      groupAssignments: await groupAssignmentView(em, groups),
    };
  }

  async create(teamId: string, input: unknown, actor: Actor) {
    const body = parseInput(createAccessSchema, input);
    return this.orm.em.fork().transactional(async (em) => {
      const access = em.create(TeamAccess, { team: em.getReference(Team, teamId), name: body.name, description: body.description ?? null, icon: body.icon ?? null });
      recordTeamLog(em, { teamId, action: LogAction.accessCreated, teamMemberId: actor.teamMemberId, targetIdentifier: access.id, data: { name: access.name } });
      await em.flush();
      return accessView(access);
    });
  }

  async update(teamId: string, accessId: string, input: unknown, actor: Actor) {
    const body = parseInput(updateAccessSchema, input);
    return this.orm.em.fork().transactional(async (em) => {
      const access = await this.access(em, teamId, accessId);
      const changed = Object.fromEntries(Object.entries(body).filter(([key, value]) => value !== undefined && access[key as keyof typeof body] !== value));
      if (Object.keys(changed).length > 0) {
        em.assign(access, changed);
        recordTeamLog(em, { teamId, action: LogAction.accessUpdated, teamMemberId: actor.teamMemberId, targetIdentifier: access.id, data: changed });
        await em.flush();
      }
      return accessView(access);
    });
  }

  async delete(teamId: string, accessId: string, actor: Actor): Promise<void> {
    await this.orm.em.fork().transactional(async (em) => {
      const access = await this.access(em, teamId, accessId);
      recordTeamLog(em, { teamId, action: LogAction.accessDeleted, teamMemberId: actor.teamMemberId, targetIdentifier: access.id, data: { name: access.name } });
      em.remove(access);
      await em.flush();
    });
  }

  private async access(em: EntityManager, teamId: string, accessId: string): Promise<TeamAccess> {
    const access = isUuid(accessId) ? await em.findOne(TeamAccess, { id: accessId.toLowerCase(), team: teamId }) : null;
    if (!access) throw notFound('access', accessId);
    return access;
  }
}
