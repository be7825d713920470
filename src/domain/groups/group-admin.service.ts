import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { announceAuthChange, type AuthCache } from '../../auth/auth-changes.ts';
import { conflict, forbidden, notFound, teamLimit } from '../../errors/errors.ts';
import type { Caller } from '../members/member-admin.service.ts';
import { createGroupSchema } from '../members/member.service.ts';
import { TeamMember, TeamMemberGroup } from '../members/team-member.entity.ts';
import { LogAction, recordTeamLog } from '../team-logs/team-log.service.ts';
import { effectiveLimits } from '../teams/team-limits.ts';
import { Team } from '../teams/team.entity.ts';
import { isUuid, parseInput, uuid } from '../validation.ts';
import { groupView } from '../views.ts';
import { Group } from './group.entity.ts';

export const updateGroupSchema = createGroupSchema.partial();

export const setMemberGroupsSchema = z.strictObject({
  groupIds: z.array(uuid).max(1000).meta({ description: 'Every group the member is to be in; the others are left.' }),
});

export const reorderGroupsSchema = z.strictObject({
  groupIds: z.array(uuid).min(1).max(1000).meta({ description: 'Groups of the team in their new order; each gets its index as sort. Groups not named keep theirs.' }),
});

function assertCallerHolds(caller: Caller, permissions: Iterable<string>, what: string) {
  for (const name of permissions) {
    if (!caller.permissions.has(name)) throw forbidden(`Cannot ${what}: the caller does not hold ${name}`, name);
  }
}

/**
 * The team's groups (spec 2.13). A group's permissions add to its members', so a caller can only
 * give a group permissions it holds itself, and only move members in or out of groups whose
 * permissions it holds; every change that alters a member's permissions reaches its keys at once.
 */
export class GroupAdminService {
  private readonly orm: MikroORM;
  private readonly authCache: AuthCache;

  constructor(options: { orm: MikroORM; authCache: AuthCache }) {
    this.orm = options.orm;
    this.authCache = options.authCache;
  }

  async list(teamId: string) {
    const groups = await this.orm.em.fork().find(Group, { team: teamId }, { orderBy: [{ sort: 'asc' }, { name: 'asc' }, { id: 'asc' }] });
    return groups.map(groupView);
  }

  async create(teamId: string, input: unknown, caller: Caller) {
    const data = parseInput(createGroupSchema, input);
    assertCallerHolds(caller, data.permissions, 'give the group that permission');
    return this.orm.em.fork().transactional(async (em) => {
      // Locking the team row serialises the limit checks of concurrent creations.
      const team = await em.findOneOrFail(Team, { id: teamId }, { populate: ['plan'], lockMode: LockMode.PESSIMISTIC_WRITE });
      const limit = effectiveLimits(team.plan?.limits, team.limitOverrides).maxGroups;
      if (limit !== null && (await em.count(Group, { team })) >= limit) {
        throw teamLimit('maxGroups', `The team has reached its limit of ${limit} groups`, limit);
      }
      const group = em.create(Group, { team, ...data });
      recordTeamLog(em, { teamId, action: LogAction.groupCreated, teamMemberId: caller.teamMemberId, targetIdentifier: group.id, data: { name: group.name } });
      return groupView(group);
    });
  }

  async update(teamId: string, groupId: string, input: unknown, caller: Caller) {
    const data = parseInput(updateGroupSchema, input);
    const view = await this.orm.em.fork().transactional(async (em) => {
      const group = await this.find(em, teamId, groupId);
      const changed: Record<string, unknown> = {};
      for (const name of ['name', 'color', 'sort'] as const) {
        if (data[name] !== undefined && data[name] !== group[name]) changed[name] = data[name];
      }
      let permissionsChanged = false;
      if (data.permissions !== undefined) {
        const before = new Set(group.permissions);
        const after = new Set(data.permissions);
        const added = [...after].filter((name) => !before.has(name));
        const removed = [...before].filter((name) => !after.has(name));
        assertCallerHolds(caller, [...added, ...removed], 'change that permission of the group');
        if (added.length + removed.length > 0) {
          changed['permissions'] = { added, removed };
          permissionsChanged = true;
        }
      }
      if (Object.keys(changed).length === 0) return groupView(group);
      em.assign(group, data);
      recordTeamLog(em, { teamId, action: LogAction.groupUpdated, teamMemberId: caller.teamMemberId, targetIdentifier: group.id, data: changed });
      await em.flush();
      if (permissionsChanged) await announceAuthChange(em, teamId);
      return groupView(group);
    });
    this.authCache.invalidateTeam(teamId);
    return view;
  }

  /** Deletes the group; its members lose its permissions at once and it stops being anyone's main group. */
  async delete(teamId: string, groupId: string, caller: Caller): Promise<void> {
    await this.orm.em.fork().transactional(async (em) => {
      const group = await this.find(em, teamId, groupId);
      assertCallerHolds(caller, group.permissions, 'delete a group with that permission');
      recordTeamLog(em, { teamId, action: LogAction.groupDeleted, teamMemberId: caller.teamMemberId, targetIdentifier: group.id, data: { name: group.name } });
      em.remove(group);
      await em.flush();
      await announceAuthChange(em, teamId);
    });
    this.authCache.invalidateTeam(teamId);
  }

  /** Sets `sort` of the named groups to their position (GROUPS_UPDATED); every id must be a group of the team. */
  async reorder(teamId: string, input: unknown, caller: Caller) {
    const { groupIds } = parseInput(reorderGroupsSchema, input);
    return this.orm.em.fork().transactional(async (em) => {
      const unique = [...new Set(groupIds)];
      const groups = await em.find(Group, { id: { $in: unique }, team: teamId });
      if (groups.length !== unique.length) throw notFound('group', unique.find((id) => !groups.some((group) => group.id === id)));
      const byId = new Map(groups.map((group) => [group.id, group]));
      unique.forEach((id, index) => (byId.get(id)!.sort = index));
      recordTeamLog(em, { teamId, action: LogAction.groupsUpdated, teamMemberId: caller.teamMemberId, data: { order: unique } });
      await em.flush();
      return (await em.find(Group, { team: teamId }, { orderBy: [{ sort: 'asc' }, { name: 'asc' }, { id: 'asc' }] })).map(groupView);
    });
  }

  /** Puts a member into a group (MEMBER_GROUP_ADDED); its keys gain the group's permissions at once. */
  async addMember(teamId: string, groupId: string, memberId: string, caller: Caller): Promise<void> {
    try {
      await this.changeMembership(teamId, groupId, memberId, caller, async (em, group, member) => {
        em.create(TeamMemberGroup, { member, group });
        recordTeamLog(em, { teamId, action: LogAction.memberGroupAdded, teamMemberId: caller.teamMemberId, targetTeamMemberId: member.id, targetIdentifier: group.id });
      });
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) throw conflict('The member is already in that group', groupId);
      throw error;
    }
  }

  /** Takes a member out of a group (MEMBER_GROUP_REMOVED); its keys lose the group's permissions at once. */
  async removeMember(teamId: string, groupId: string, memberId: string, caller: Caller): Promise<void> {
    await this.changeMembership(teamId, groupId, memberId, caller, async (em, group, member) => {
      const membership = await em.findOne(TeamMemberGroup, { member, group });
      if (!membership) throw notFound('membership of the member in the group', memberId);
      em.remove(membership);
      if (member.mainGroup?.id === group.id) member.mainGroup = null;
      recordTeamLog(em, { teamId, action: LogAction.memberGroupRemoved, teamMemberId: caller.teamMemberId, targetTeamMemberId: member.id, targetIdentifier: group.id });
    });
  }

  /**
   * Replaces the set of groups a member is in (MEMBER_GROUPS_CHANGED with `{added, removed}`); the caller must hold the
   * permissions of every group added or removed. A main group the member leaves is cleared.
   */
  async setMemberGroups(teamId: string, memberId: string, input: unknown, caller: Caller) {
    const wanted = new Set(parseInput(setMemberGroupsSchema, input).groupIds);
    const result = await this.orm.em.fork().transactional(async (em) => {
      const member = isUuid(memberId)
        ? await em.findOne(TeamMember, { id: memberId, team: teamId, leftTeamAt: null }, { lockMode: LockMode.PESSIMISTIC_WRITE })
        : null;
      if (!member) throw notFound('team member', memberId);
      const groups = wanted.size ? await em.find(Group, { id: { $in: [...wanted] }, team: teamId }) : [];
      if (groups.length !== wanted.size) throw notFound('group', [...wanted].find((id) => !groups.some((group) => group.id === id)));
      const memberships = await em.find(TeamMemberGroup, { member }, { populate: ['group'] });
      const current = new Set(memberships.map((membership) => membership.group.id));
      const added = groups.filter((group) => !current.has(group.id));
      const removed = memberships.filter((membership) => !wanted.has(membership.group.id));
      for (const group of [...added, ...removed.map((membership) => membership.group)]) {
        assertCallerHolds(caller, group.permissions, 'move members in or out of a group with that permission');
      }
      if (added.length + removed.length > 0) {
        for (const group of added) em.create(TeamMemberGroup, { member, group });
        for (const membership of removed) em.remove(membership);
        if (member.mainGroup && !wanted.has(member.mainGroup.id)) member.mainGroup = null;
        recordTeamLog(em, {
          teamId, action: LogAction.memberGroupsChanged, teamMemberId: caller.teamMemberId, targetTeamMemberId: member.id,
          data: { added: added.map((group) => group.id), removed: removed.map((membership) => membership.group.id) },
        });
        await em.flush();
        await announceAuthChange(em, teamId);
      }
      const now = await em.find(Group, { id: { $in: [...wanted] } }, { orderBy: [{ sort: 'asc' }, { name: 'asc' }, { id: 'asc' }] });
      return now.map(groupView);
    });
    this.authCache.invalidateTeam(teamId);
    return result;
  }

  private async changeMembership(
    teamId: string, groupId: string, memberId: string, caller: Caller,
    change: (em: EntityManager, group: Group, member: TeamMember) => Promise<void>,
  ): Promise<void> {
    await this.orm.em.fork().transactional(async (em) => {
      const group = await this.find(em, teamId, groupId);
      const member = isUuid(memberId) ? await em.findOne(TeamMember, { id: memberId, team: teamId, leftTeamAt: null }) : null;
      if (!member) throw notFound('team member', memberId);
      assertCallerHolds(caller, group.permissions, 'move members in or out of a group with that permission');
      await change(em, group, member);
      await em.flush();
      await announceAuthChange(em, teamId);
    });
    this.authCache.invalidateTeam(teamId);
  }

  private async find(em: EntityManager, teamId: string, groupId: string): Promise<Group> {
    const group = isUuid(groupId) ? await em.findOne(Group, { id: groupId, team: teamId }, { lockMode: LockMode.PESSIMISTIC_WRITE }) : null;
    if (!group) throw notFound('group', groupId);
    return group;
  }
}
