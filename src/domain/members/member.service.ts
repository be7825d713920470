import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { announceAuthChange, type AuthCache } from '../../auth/auth-changes.ts';
import { isPermissionName } from '../../auth/permissions.ts';
import { conflict, notFound, teamLimit } from '../../errors/errors.ts';
import { Group } from '../groups/group.entity.ts';
import { LogAction, recordTeamLog } from '../team-logs/team-log.service.ts';
import { effectiveLimits } from '../teams/team-limits.ts';
import { Team } from '../teams/team.entity.ts';
import { createPlaceholderUser } from '../users/user.factory.ts';
import { isUuid, parseInput, uuid } from '../validation.ts';
import { groupView, teamMemberView } from '../views.ts';
import { TeamMember, TeamMemberGroup } from './team-member.entity.ts';

const permissions = z
  .array(z.string().refine(isPermissionName, 'must be permission names such as team.media.view'))
  .max(200)
  .transform((names) => [...new Set(names)]);

export const createMemberSchema = z.strictObject({
  name: z.string().regex(/^[a-zA-Z0-9_]{3,20}$/, 'must be 3-20 characters of a-z A-Z 0-9 _'),
  permissions,
  groupIds: z.array(uuid).max(100).optional(),
});

export const createGroupSchema = z.strictObject({
  name: z.string().trim().min(2).max(24),
  permissions,
  color: z.string().regex(/^#([A-Fa-f0-9]{6}|[A-Fa-f0-9]{3})$/, 'must be a hex colour such as #1e90ff').optional(),
  sort: z.number().int().min(0).max(1_000_000).optional(),
});

export const addToGroupSchema = z.strictObject({ groupId: uuid });

async function lockTeam(em: EntityManager, teamId: string): Promise<Team> {
  // Locking the team row serialises limit checks of concurrent creations.
  const team = isUuid(teamId) ? await em.findOne(Team, { id: teamId }, { populate: ['plan'], lockMode: LockMode.PESSIMISTIC_WRITE }) : null;
  if (!team) throw notFound('team', teamId);
  return team;
}

function limitOf(team: Team, key: 'maxMembers' | 'maxGroups'): number | null {
  return effectiveLimits(team.plan?.limits, team.limitOverrides)[key];
}

export class MemberService {
  private readonly orm: MikroORM;
  private readonly authCache: AuthCache;

  constructor(options: { orm: MikroORM; authCache: AuthCache }) {
    this.orm = options.orm;
    this.authCache = options.authCache;
  }

  async createMember(teamId: string, input: unknown) {
    const { name, permissions, groupIds = [] } = parseInput(createMemberSchema, input);
    const view = await this.orm.em.fork().transactional(async (em) => {
      const team = await lockTeam(em, teamId);
      const limit = limitOf(team, 'maxMembers');
      if (limit !== null && (await em.count(TeamMember, { team, leftTeamAt: null })) >= limit) {
        throw teamLimit('maxMembers', `The team has reached its limit of ${limit} members`, limit);
      }
      if (await em.count(TeamMember, { team, name, leftTeamAt: null })) throw conflict(`A member named ${name} already exists`, name);
      const groups = groupIds.length ? await em.find(Group, { id: { $in: groupIds }, team }) : [];
      if (groups.length !== new Set(groupIds).size) throw notFound('group');
      const member = em.create(TeamMember, { team, user: createPlaceholderUser(em), name, permissions });
      for (const group of groups) em.create(TeamMemberGroup, { member, group });
      recordTeamLog(em, { teamId, action: LogAction.memberJoined, teamMemberId: member.id, targetTeamMemberId: member.id });
      return teamMemberView(member);
    });
    return view;
  }

  async createGroup(teamId: string, input: unknown) {
    const data = parseInput(createGroupSchema, input);
    return this.orm.em.fork().transactional(async (em) => {
      const team = await lockTeam(em, teamId);
      const limit = limitOf(team, 'maxGroups');
      if (limit !== null && (await em.count(Group, { team })) >= limit) {
        throw teamLimit('maxGroups', `The team has reached its limit of ${limit} groups`, limit);
      }
      const group = em.create(Group, { team, ...data });
      recordTeamLog(em, { teamId, action: LogAction.groupCreated, targetIdentifier: group.id, data: { name: group.name } });
      return groupView(group);
    });
  }

  /** Adds a member to a group; the member's keys gain the group's permissions at once. */
  async addMemberToGroup(teamId: string, memberId: string, input: unknown) {
    const { groupId } = parseInput(addToGroupSchema, input);
    try {
      await this.orm.em.fork().transactional(async (em) => {
        await lockTeam(em, teamId);
        const member = isUuid(memberId) ? await em.findOne(TeamMember, { id: memberId, team: teamId }) : null;
        if (!member) throw notFound('team member', memberId);
        const group = await em.findOne(Group, { id: groupId, team: teamId });
        if (!group) throw notFound('group', groupId);
        em.create(TeamMemberGroup, { member, group });
        recordTeamLog(em, { teamId, action: LogAction.memberGroupAdded, targetTeamMemberId: member.id, targetIdentifier: group.id });
        await em.flush();
        await announceAuthChange(em, teamId);
      });
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) throw conflict('The member is already in that group', groupId);
      throw error;
    }
    this.authCache.invalidateTeam(teamId);
  }
}
