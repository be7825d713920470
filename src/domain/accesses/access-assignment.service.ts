import { randomUUID } from 'node:crypto';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { Permission } from '../../auth/permissions.ts';
import { conflict, forbidden, notFound } from '../../errors/errors.ts';
import type { Actor } from '../actor.ts';
import { futureTimestamp } from '../future-timestamp.ts';
import { Group } from '../groups/group.entity.ts';
import type { Caller } from '../members/member-admin.service.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import { LogAction, recordTeamLog } from '../team-logs/team-log.service.ts';
import { isUuid, parseInput, uuid } from '../validation.ts';
import {
  activeGroupAssignments, activeMemberAssignments, type AssignmentRow, groupAssignmentView, memberAssignmentView,
} from './access-assignment-queries.ts';
import { TeamAccess } from './team-access.entity.ts';
import { accessView } from './team-access.service.ts';

const note = z.string().trim().max(500).nullable().optional();
const expiresAt = futureTimestamp.nullable().optional().meta({ description: 'When the assignment ends (in the future, at most ten years ahead); null or absent: never.' });

export const assignMemberSchema = z.strictObject({ teamMemberId: uuid, note, expiresAt });
export const assignGroupSchema = z.strictObject({ groupId: uuid, note, expiresAt });

/** What kind of assignment: its table, its target column and what the log calls it. */
const KINDS = {
  member: { table: 'team_access_assignment', column: 'team_member_id', assigned: LogAction.accessAssigned, unassigned: LogAction.accessUnassigned },
  group: { table: 'team_access_group_assignment', column: 'group_id', assigned: LogAction.accessGroupAssigned, unassigned: LogAction.accessGroupUnassigned },
} as const;
type Kind = keyof typeof KINDS;

/**
 * Assignments of accesses to members (direct) and to groups, with a note, an optional expiry
 * and who assigned them; and a member's effective accesses. One row per access and member (or
 * group): assigning again while one is in force is 409; an expired one (or, for a member, one
 * from before it last joined) is replaced in the same statement, so that two instances racing
 * to assign make exactly one assignment.
 */
export class AccessAssignmentService {
  private readonly orm: MikroORM;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  async assignMember(teamId: string, accessId: string, input: unknown, actor: Actor) {
    const body = parseInput(assignMemberSchema, input);
    return this.orm.em.fork().transactional(async (em) => {
      const access = await this.access(em, teamId, accessId);
      const member = await em.findOne(TeamMember, { id: body.teamMemberId.toLowerCase(), team: teamId, leftTeamAt: null });
      if (!member) throw notFound('team member', body.teamMemberId);
      // A row of this member that is no longer in force: expired, or made before the member last joined.
      const stale = `team_access_assignment.expires_at <= ? or team_access_assignment.assigned_at < (select joined_team_at from team_member where id = excluded.team_member_id)`;
      const row = await this.insert(em, 'member', teamId, access, member.id, body, actor, stale);
      recordTeamLog(em, {
        teamId, action: LogAction.accessAssigned, teamMemberId: actor.teamMemberId, targetTeamMemberId: member.id, targetIdentifier: access.id,
        data: { assignmentId: row.id, expiresAt: body.expiresAt ?? null },
      });
      await em.flush();
      return (await memberAssignmentView(em, [row]))[0]!;
    });
  }

  async assignGroup(teamId: string, accessId: string, input: unknown, actor: Actor) {
    const body = parseInput(assignGroupSchema, input);
    return this.orm.em.fork().transactional(async (em) => {
      const access = await this.access(em, teamId, accessId);
      const group = await em.findOne(Group, { id: body.groupId.toLowerCase(), team: teamId });
      if (!group) throw notFound('group', body.groupId);
      const row = await this.insert(em, 'group', teamId, access, group.id, body, actor, 'team_access_group_assignment.expires_at <= ?');
      recordTeamLog(em, {
        teamId, action: LogAction.accessGroupAssigned, teamMemberId: actor.teamMemberId, targetIdentifier: access.id,
        data: { assignmentId: row.id, groupId: group.id, expiresAt: body.expiresAt ?? null },
      });
      await em.flush();
      return (await groupAssignmentView(em, [row]))[0]!;
    });
  }

  /** Takes back an assignment in force (an expired one is gone already: 404). */
  async unassign(kind: Kind, teamId: string, accessId: string, assignmentId: string, actor: Actor): Promise<void> {
    const { table, column, unassigned } = KINDS[kind];
    await this.orm.em.fork().transactional(async (em) => {
      const access = await this.access(em, teamId, accessId);
      const active = kind === 'member' ? activeMemberAssignments('x', 'm') : activeGroupAssignments('x');
      const join = kind === 'member' ? 'join team_member m on m.id = x.team_member_id' : '';
      const [row] = isUuid(assignmentId)
        ? await em.execute<AssignmentRow[]>(`select x.* from ${table} x ${join} where x.id = ? and x.access_id = ? and ${active} for update of x`,
          [assignmentId.toLowerCase(), access.id, new Date()])
        : [];
      if (!row) throw notFound('access assignment', assignmentId);
      await em.execute(`delete from ${table} where id = ?`, [row.id]);
      recordTeamLog(em, {
        teamId, action: unassigned, teamMemberId: actor.teamMemberId, targetIdentifier: access.id,
        ...(kind === 'member' ? { targetTeamMemberId: row.team_member_id! } : {}),
        data: { assignmentId: row.id, ...(kind === 'group' && { groupId: row[column as 'group_id'] }) },
      });
      await em.flush();
    });
  }

  /** Spec 2.16 member access assignments: the member's direct ones and those of its groups, in force, by access name. */
  async ofMember(teamId: string, memberId: string, caller: Caller) {
    const em = this.orm.em.fork();
    const member = isUuid(memberId) ? await em.findOne(TeamMember, { id: memberId.toLowerCase(), team: teamId }) : null;
    if (!member) throw notFound('team member', memberId);
    if (member.id !== caller.teamMemberId && !caller.permissions.has(Permission.accessesView)) {
      throw forbidden(`Missing permission ${Permission.accessesView}`, Permission.accessesView);
    }
    const now = new Date();
    const [direct, viaGroups] = await Promise.all([
      em.execute<AssignmentRow[]>(`select a.* from team_access_assignment a join team_member m on m.id = a.team_member_id
        where a.team_member_id = ? and ${activeMemberAssignments('a', 'm')}`, [member.id, now]),
      // Through groups only while a member: one who left has none.
      member.leftTeamAt ? [] : em.execute<AssignmentRow[]>(`select g.* from team_access_group_assignment g
        join team_member_group mg on mg.group_id = g.group_id where mg.member_id = ? and ${activeGroupAssignments('g')}`, [member.id, now]),
    ]);
    const ids = [...new Set([...direct, ...viaGroups].map((row) => row.access_id))];
    const accesses = new Map((ids.length > 0 ? await em.find(TeamAccess, { id: { $in: ids } }) : []).map((access) => [access.id, access]));
    const data = [
      ...(await memberAssignmentView(em, direct)).map((view) => ({ ...view, source: 'direct' as const, access: accessView(accesses.get(view.accessId)!) })),
      ...(await groupAssignmentView(em, viaGroups)).map((view) => ({ ...view, source: 'group' as const, access: accessView(accesses.get(view.accessId)!) })),
    ].sort((x, y) => x.access.name.localeCompare(y.access.name) || x.source.localeCompare(y.source) || x.id.localeCompare(y.id));
    return { data, count: data.length };
  }

  /**
   * One statement decides: a new row, or the stale row of this access and target replaced (a new
   * id, so a DELETE aimed at the old one finds nothing), or nothing when one is in force: 409.
   */
  private async insert(
    em: EntityManager, kind: Kind, teamId: string, access: TeamAccess, targetId: string,
    body: { note?: string | null; expiresAt?: string | null }, actor: Actor, stale: string,
  ): Promise<AssignmentRow> {
    const { table, column } = KINDS[kind];
    const now = new Date();
    const rows = await em.execute<AssignmentRow[]>(
      `insert into ${table} (id, team_id, access_id, ${column}, note, assigned_at, expires_at, assigned_by_id) values (?, ?, ?, ?, ?, ?, ?, ?)
       on conflict (access_id, ${column}) do update set id = excluded.id, note = excluded.note, assigned_at = excluded.assigned_at,
         expires_at = excluded.expires_at, assigned_by_id = excluded.assigned_by_id
       where ${stale}
       returning *`,
      [randomUUID(), teamId, access.id, targetId, body.note || null, now, body.expiresAt ? new Date(body.expiresAt) : null, actor.teamMemberId, now]);
    if (rows.length === 0) throw conflict(`The ${kind} has this access already`, targetId);
    return rows[0]!;
  }

  private async access(em: EntityManager, teamId: string, accessId: string): Promise<TeamAccess> {
    const access = isUuid(accessId) ? await em.findOne(TeamAccess, { id: accessId.toLowerCase(), team: teamId }) : null;
    if (!access) throw notFound('access', accessId);
    return access;
  }
}
