import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import { z } from 'zod';
import { announceAuthChange, type AuthCache } from '../../auth/auth-changes.ts';
import { isPermissionName } from '../../auth/permissions.ts';
import { badRequest, conflict, forbidden, notFound } from '../../errors/errors.ts';
import { Group } from '../groups/group.entity.ts';
import { MAX_SEARCH_LENGTH } from '../media/media.service.ts';
import type { Paging } from '../paging.ts';
import type { Actor } from '../actor.ts';
import type { UpcomingMeetings } from '../meetings/upcoming-meetings.ts';
import { LogAction, recordTeamLog } from '../team-logs/team-log.service.ts';
import { isUuid, parseInput, uuid } from '../validation.ts';
import { groupView, teamMemberView } from '../views.ts';
import { TeamMember, TeamMemberGroup } from './team-member.entity.ts';

export const MEMBER_NAME_PATTERN = /^[a-zA-Z0-9_]{3,20}$/;

export const updateMemberSchema = z.strictObject({
  name: z.string().regex(MEMBER_NAME_PATTERN, 'must be 3-20 characters of a-z A-Z 0-9 _').optional(),
  permissions: z
    .array(z.string().refine(isPermissionName, 'must be permission names such as team.media.view'))
    .max(200)
    .transform((names) => [...new Set(names)])
    .optional()
    .meta({ description: 'Replaces the member\'s own permissions; only permissions the caller holds can be granted or taken away.' }),
  mainGroupId: uuid.nullable().optional().meta({ description: 'A group the member is in; null for none.' }),
  sort: z.number().int().min(0).max(1_000_000).optional(),
  personalNote: z.string().max(2000).optional(),
});

/** Who calls: the actor for the log and the permissions of the calling key (what it may grant). */
export interface Caller extends Actor {
  permissions: ReadonlySet<string>;
}

export function parseMemberSearch(query: URLSearchParams): string | undefined {
  const search = query.get('search');
  if (search === null || search === '') return undefined;
  if (search.length > MAX_SEARCH_LENGTH) throw badRequest(`search is at most ${MAX_SEARCH_LENGTH} characters.`, 'search');
  return search;
}

function userView(member: TeamMember) {
  return { username: member.user.username, accounts: [] as unknown[] };
}

function mainGroupShort(group: Group | null | undefined) {
  return group ? { id: group.id, name: group.name, color: group.color, sort: group.sort } : null;
}

/** The members of a team as the team itself manages them (spec 2.13). */
export class MemberAdminService {
  private readonly orm: MikroORM;
  private readonly authCache: AuthCache;
  private readonly upcomingMeetings: UpcomingMeetings;

  constructor(options: { orm: MikroORM; authCache: AuthCache; upcomingMeetings: UpcomingMeetings }) {
    this.orm = options.orm;
    this.authCache = options.authCache;
    this.upcomingMeetings = options.upcomingMeetings;
  }

  /** Current members (not those who left), by sort then name; `{data, count}` of TeamMemberInfo2. */
  async list(teamId: string, paging: Paging, search?: string) {
    const em = this.orm.em.fork();
    const where = { team: teamId, leftTeamAt: null, ...(search && { name: { $ilike: `%${search.replace(/[\\%_]/g, '\\$&')}%` } }) };
    const [members, count] = await em.findAndCount(TeamMember, where, {
      populate: ['mainGroup', 'user'],
      orderBy: [{ sort: 'asc' }, { name: 'asc' }, { id: 'asc' }],
      limit: paging.pageSize,
      offset: (paging.pageNumber - 1) * paging.pageSize,
    });
    return { data: members.map((member) => ({ ...teamMemberView(member), mainGroup: mainGroupShort(member.mainGroup), user: userView(member) })), count };
  }

  /** TeamMemberInfo: the member with its groups, main group and user; members who left too. */
  async get(teamId: string, memberId: string) {
    return this.info(this.orm.em.fork(), await this.find(this.orm.em.fork(), teamId, memberId));
  }

  async update(teamId: string, memberId: string, input: unknown, caller: Caller) {
    const data = parseInput(updateMemberSchema, input);
    try {
      const view = await this.orm.em.fork().transactional(async (em) => {
        const member = await this.find(em, teamId, memberId, true);
        if (member.leftTeamAt) throw notFound('team member', memberId);
        const changed: Record<string, unknown> = {};
        if (data.name !== undefined && data.name !== member.name) changed['name'] = member.name = data.name;
        if (data.sort !== undefined && data.sort !== member.sort) changed['sort'] = member.sort = data.sort;
        if (data.personalNote !== undefined && data.personalNote !== member.personalNote) changed['personalNote'] = member.personalNote = data.personalNote;
        if (data.mainGroupId !== undefined && data.mainGroupId !== (member.mainGroup?.id ?? null)) {
          if (data.mainGroupId !== null && !(await em.count(TeamMemberGroup, { member, group: { id: data.mainGroupId, team: teamId } }))) {
            throw notFound('group of the member', data.mainGroupId);
          }
          member.mainGroup = data.mainGroupId === null ? null : em.getReference(Group, data.mainGroupId);
          changed['mainGroupId'] = data.mainGroupId;
        }
        if (Object.keys(changed).length > 0) {
          recordTeamLog(em, { teamId, action: LogAction.memberUpdated, teamMemberId: caller.teamMemberId, targetTeamMemberId: member.id, data: changed });
        }
        if (data.permissions !== undefined) {
          const before = new Set(member.permissions);
          const after = new Set(data.permissions);
          const added = [...after].filter((name) => !before.has(name));
          const removed = [...before].filter((name) => !after.has(name));
          const beyondCaller = [...added, ...removed].find((name) => !caller.permissions.has(name));
          if (beyondCaller) throw forbidden(`Cannot grant or take away a permission the caller does not hold: ${beyondCaller}`, beyondCaller);
          if (member.isTeamOwner && removed.length > 0) throw forbidden('The owner keeps every permission');
          if (added.length + removed.length > 0) {
            member.permissions = data.permissions;
            recordTeamLog(em, { teamId, action: LogAction.memberPermissionsUpdated, teamMemberId: caller.teamMemberId, targetTeamMemberId: member.id, data: { added, removed } });
            await em.flush();
            await announceAuthChange(em, teamId);
          }
        }
        await em.flush();
        return this.info(em, member);
      });
      this.authCache.invalidateTeam(teamId);
      return view;
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) throw conflict(`A member named ${data.name} already exists`, data.name);
      throw error;
    }
  }

  /** Kicks a member (MEMBER_KICKED): the row stays, archived with leftTeamAt; its keys stop working at once. */
  async kick(teamId: string, memberId: string, caller: Caller): Promise<void> {
    await this.depart(teamId, memberId, LogAction.memberKicked, caller);
  }

  /** The calling key's member leaves the team (MEMBER_LEFT). */
  async leave(teamId: string, caller: Caller): Promise<void> {
    if (!caller.teamMemberId) throw forbidden('The owner cannot leave without transferring the team first');
    await this.depart(teamId, caller.teamMemberId, LogAction.memberLeft, caller);
  }

  private async depart(teamId: string, memberId: string, action: typeof LogAction.memberKicked | typeof LogAction.memberLeft, caller: Caller) {
    await this.orm.em.fork().transactional(async (em) => {
      const member = await this.find(em, teamId, memberId, true);
      if (member.leftTeamAt) throw notFound('team member', memberId);
      if (member.isTeamOwner) {
        throw forbidden(action === LogAction.memberKicked ? 'The owner cannot be kicked' : 'The owner cannot leave without transferring the team first');
      }
      member.leftTeamAt = new Date();
      member.archived = true;
      recordTeamLog(em, { teamId, action, teamMemberId: caller.teamMemberId, targetTeamMemberId: member.id });
      await em.flush();
      await announceAuthChange(em, teamId);
    });
    this.authCache.invalidateTeam(teamId);
  }

  /** The member a key acts as: its linked member, or the owner for a key linked to none. */
  async self(teamId: string, caller: Actor) {
    const em = this.orm.em.fork();
    const member = caller.teamMemberId
      ? await this.find(em, teamId, caller.teamMemberId)
      : await em.findOne(TeamMember, { team: teamId, isTeamOwner: true }, { populate: ['user', 'mainGroup'] });
    if (!member) throw notFound('team member');
    return member;
  }

  /** Dashboard info of spec 2.13; `meetings` are the member's upcoming ones (UpcomingMeetings). */
  async dashboard(teamId: string, caller: Actor) {
    const member = await this.self(teamId, caller);
    const memberCount = await this.orm.em.fork().count(TeamMember, { team: teamId, leftTeamAt: null });
    return { member: teamMemberView(member), memberCount, meetings: await this.upcomingMeetings.forMember(teamId, member.id) };
  }

  private async info(em: EntityManager, member: TeamMember) {
    const memberships = await em.find(TeamMemberGroup, { member }, { populate: ['group'], orderBy: { group: { sort: 'asc', name: 'asc' } } });
    const main = member.mainGroup ? await em.findOne(Group, { id: member.mainGroup.id }) : null;
    return {
      ...teamMemberView(member),
      groups: memberships.map((membership) => groupView(membership.group)),
      mainGroup: main ? groupView(main) : null,
      user: userView(member),
    };
  }

  private async find(em: EntityManager, teamId: string, memberId: string, lock = false): Promise<TeamMember> {
    // Locked without joins: FOR UPDATE cannot lock the nullable side of the main group's outer join.
    const member = isUuid(memberId) ? await em.findOne(TeamMember, { id: memberId, team: teamId }, lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {}) : null;
    if (!member) throw notFound('team member', memberId);
    await em.populate(member, ['user', 'mainGroup']);
    return member;
  }
}
