import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { announceAuthChange, type AuthCache } from '../../auth/auth-changes.ts';
import { ApiKey } from '../api-keys/api-key.entity.ts';
import { badRequest, conflict, forbidden, notFound, teamArchived, teamLimit } from '../../errors/errors.ts';
import { Group } from '../groups/group.entity.ts';
import { MEMBER_NAME_PATTERN, type Caller } from '../members/member-admin.service.ts';
import { TeamMember, TeamMemberGroup } from '../members/team-member.entity.ts';
import type { Actor } from '../actor.ts';
import { LogAction, recordTeamLog } from '../team-logs/team-log.service.ts';
import { effectiveLimits } from '../teams/team-limits.ts';
import { JOIN_REQUIREMENTS, Team } from '../teams/team.entity.ts';
import { User } from '../users/user.entity.ts';
import { isUuid, parseInput, uuid } from '../validation.ts';
import { teamMemberView } from '../views.ts';
import { Invite } from './invite.entity.ts';
import { Account } from '../accounts/account.entity.ts';
import { minimalAccountView, REQUIREMENT_PROVIDERS } from '../accounts/account-data.ts';

const DAY_MS = 86_400_000;
export const MAX_INVITE_DAYS = 365;
export const DEFAULT_INVITE_DAYS = 7;

export const createInviteSchema = z.strictObject({
  groupId: uuid,
  isMultiUse: z.boolean().optional().meta({ description: 'Needs the plan\'s multiUseInvites (402 otherwise).' }),
  expireDate: z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time' }).optional()
    .meta({ description: `In the future, at most ${MAX_INVITE_DAYS} days ahead; default ${DEFAULT_INVITE_DAYS} days from now.` }),
});

const memberName = z.string().regex(MEMBER_NAME_PATTERN, 'must be 3-20 characters of a-z A-Z 0-9 _').optional()
  .meta({ description: 'The member name; default the user\'s username.' });

export const acceptInviteSchema = z.strictObject({ userId: uuid, name: memberName });

/** POST /v1/invites/:inviteId/accept: the signed-in user joins. */
export const acceptOwnInviteSchema = z.strictObject({ name: memberName });

/** The join requirements (spec 2.11) the user's linked accounts do not meet, in JOIN_REQUIREMENTS order. */
async function unmetRequirements(em: EntityManager, team: Team, userId: string): Promise<(typeof JOIN_REQUIREMENTS)[number][]> {
  const required = JOIN_REQUIREMENTS.filter((requirement) => team.joinRequirements[requirement]);
  if (required.length === 0) return [];
  const linked = new Set((await em.find(Account, { user: userId, providerId: { $in: required.map((r) => REQUIREMENT_PROVIDERS[r]) } })).map((a) => a.providerId));
  return required.filter((requirement) => !linked.has(REQUIREMENT_PROVIDERS[requirement]));
}

/**
 * A user who left (or was kicked) joins again in its archived member row: the same member id, so
 * the log and the notes about it stay with it. It comes back as a newcomer: no permissions of its
 * own, no groups but the invite's, its name (or the one given; 409 if a current member has it).
 * Keys made for it before it left are deleted (API_KEY_DELETED), so none of them works again.
 */
async function rejoin(em: EntityManager, member: TeamMember, name: string | undefined, inviteId: string): Promise<TeamMember> {
  await em.nativeDelete(TeamMemberGroup, { member });
  for (const key of await em.find(ApiKey, { teamMember: member })) {
    recordTeamLog(em, {
      teamId: member.team.id, action: LogAction.apiKeyDeleted, targetTeamMemberId: member.id, targetIdentifier: key.id,
      data: { description: key.description ?? null, reason: 'memberRejoined', inviteId },
    });
    em.remove(key);
  }
  em.assign(member, {
    name: name ?? member.name, leftTeamAt: null, archived: false, joinedTeamAt: new Date(), permissions: [], sort: 0, mainGroup: null,
  });
  return member;
}

function inviteView(invite: Invite) {
  return {
    id: invite.id, teamId: invite.team.id, groupId: invite.group.id, isUsed: invite.isUsed, isMultiUse: invite.isMultiUse,
    createdAt: invite.createdAt.toISOString(), expireDate: invite.expireDate.toISOString(),
  };
}

/** Team invites (spec 2.13): a team creates them; accepting one makes a member. */
export class InviteService {
  private readonly orm: MikroORM;
  private readonly authCache: AuthCache;

  constructor(options: { orm: MikroORM; authCache: AuthCache }) {
    this.orm = options.orm;
    this.authCache = options.authCache;
  }

  async list(teamId: string) {
    const invites = await this.orm.em.fork().find(Invite, { team: teamId }, { orderBy: [{ createdAt: 'desc' }, { id: 'asc' }] });
    return invites.map(inviteView);
  }

  async create(teamId: string, input: unknown, caller: Caller) {
    const { groupId, isMultiUse = false, expireDate } = parseInput(createInviteSchema, input);
    const now = Date.now();
    const expires = expireDate ? new Date(expireDate) : new Date(now + DEFAULT_INVITE_DAYS * DAY_MS);
    if (expires.getTime() <= now || expires.getTime() > now + MAX_INVITE_DAYS * DAY_MS) {
      throw badRequest(`Invalid expireDate: must be in the future and at most ${MAX_INVITE_DAYS} days ahead`, 'expireDate');
    }
    return this.orm.em.fork().transactional(async (em) => {
      const team = await em.findOneOrFail(Team, { id: teamId }, { populate: ['plan'] });
      if (isMultiUse && !effectiveLimits(team.plan?.limits, team.limitOverrides).multiUseInvites) {
        throw teamLimit('multiUseInvites', 'The team\'s plan does not allow multi-use invites', 'multiUseInvites');
      }
      const group = await em.findOne(Group, { id: groupId, team });
      if (!group) throw notFound('group', groupId);
      // An invite hands out the group's permissions, so the caller must hold them.
      const missing = group.permissions.find((name) => !caller.permissions.has(name));
      if (missing) throw forbidden(`Cannot invite into a group with a permission the caller does not hold: ${missing}`, missing);
      const invite = em.create(Invite, { team, group, isMultiUse, expireDate: expires });
      recordTeamLog(em, { teamId, action: LogAction.inviteCreated, teamMemberId: caller.teamMemberId, targetIdentifier: invite.id, data: { groupId, isMultiUse } });
      await em.flush();
      return inviteView(invite);
    });
  }

  async delete(teamId: string, inviteId: string, actor: Actor): Promise<void> {
    await this.orm.em.fork().transactional(async (em) => {
      const invite = isUuid(inviteId) ? await em.findOne(Invite, { id: inviteId, team: teamId }) : null;
      if (!invite) throw notFound('invite', inviteId);
      recordTeamLog(em, { teamId, action: LogAction.inviteDeleted, teamMemberId: actor.teamMemberId, targetIdentifier: invite.id });
      em.remove(invite);
      await em.flush();
    });
  }

  /** Deletes every invite of the team (INVITES_CLEAR); answers how many. */
  async clear(teamId: string, actor: Actor) {
    return this.orm.em.fork().transactional(async (em) => {
      const deleted = await em.nativeDelete(Invite, { team: teamId });
      recordTeamLog(em, { teamId, action: LogAction.invitesClear, teamMemberId: actor.teamMemberId, data: { deleted } });
      await em.flush();
      return { deleted };
    });
  }

  /**
   * Accepts an invite for a user (MEMBER_JOINED): checks expiry, use, the team's join requirements
   * (met by the user's linked accounts: REQUIREMENT_PROVIDERS) and maxMembers. A single-use invite is claimed by one conditional update, so of two racing
   * accepts exactly one makes a member.
   */
  async accept(inviteId: string, input: unknown) {
    const { userId, name } = parseInput(acceptInviteSchema, input);
    return this.join(inviteId, userId, name);
  }

  /** The signed-in user accepts an invite for itself. */
  async acceptAsUser(inviteId: string, userId: string, input: unknown) {
    const { name } = parseInput(acceptOwnInviteSchema, input);
    return this.join(inviteId, userId, name);
  }

  /**
   * Team join info (spec 2.11) for a user holding an invite: the minimal team, its requirements
   * and the user's linked accounts (minimal account info). A used or expired invite is not found.
   */
  async joinInfo(inviteId: string, userId: string) {
    const em = this.orm.em.fork();
    const invite = isUuid(inviteId) ? await em.findOne(Invite, { id: inviteId }, { populate: ['team'] }) : null;
    if (!invite || invite.expireDate.getTime() <= Date.now() || (invite.isUsed && !invite.isMultiUse)) throw notFound('invite', inviteId);
    const team = invite.team;
    const accounts = await em.find(Account, { user: userId }, { orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
    return {
      id: team.id, name: team.name, logo: team.logo ?? null, priceId: team.priceId ?? null,
      requirements: Object.fromEntries(JOIN_REQUIREMENTS.map((requirement) => [requirement, team.joinRequirements[requirement] === true])),
      connections: accounts.map(minimalAccountView),
    };
  }

  private async join(inviteId: string, userId: string, name: string | undefined) {
    try {
      const result = await this.orm.em.fork().transactional(async (em) => {
        const invite = isUuid(inviteId) ? await em.findOne(Invite, { id: inviteId }, { populate: ['group'] }) : null;
        if (!invite || invite.expireDate.getTime() <= Date.now()) throw notFound('invite', inviteId);
        // Serialises joins of one team: the member limit holds under concurrency.
        const team = await em.findOneOrFail(Team, { id: invite.team.id }, { populate: ['plan'], lockMode: LockMode.PESSIMISTIC_WRITE });
        if (team.archived) throw teamArchived();
        if (!invite.isMultiUse) {
          const claimed = await em.nativeUpdate(Invite, { id: invite.id, isUsed: false }, { isUsed: true });
          if (claimed === 0) throw notFound('invite', inviteId);
        }
        const user = await em.findOne(User, { id: userId });
        if (!user) throw notFound('user', userId);
        const unmet = await unmetRequirements(em, team, user.id);
        const missing = unmet[0];
        if (missing) throw forbidden(`The team requires a linked ${missing} account (${REQUIREMENT_PROVIDERS[missing]})`, missing);
        const former = await em.findOne(TeamMember, { team, user }, { lockMode: LockMode.PESSIMISTIC_WRITE });
        if (former && !former.leftTeamAt) throw conflict('The user is already a member of the team', userId);
        const limit = effectiveLimits(team.plan?.limits, team.limitOverrides).maxMembers;
        if (limit !== null && (await em.count(TeamMember, { team, leftTeamAt: null })) >= limit) {
          throw teamLimit('maxMembers', `The team has reached its limit of ${limit} members`, limit);
        }
        const member = former ? await rejoin(em, former, name, invite.id) : em.create(TeamMember, { team, user, name: name ?? user.username, permissions: [] });
        em.create(TeamMemberGroup, { member, group: invite.group });
        member.mainGroup = invite.group;
        recordTeamLog(em, {
          teamId: team.id, action: LogAction.memberJoined, teamMemberId: member.id, targetTeamMemberId: member.id, targetIdentifier: invite.id,
          ...(former && { data: { rejoined: true } }),
        });
        await em.flush();
        await announceAuthChange(em, team.id);
        return { teamId: team.id, view: teamMemberView(member) };
      });
      this.authCache.invalidateTeam(result.teamId);
      return result.view;
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) throw conflict('A current member of the team has that name', name ?? userId);
      throw error;
    }
  }
}
