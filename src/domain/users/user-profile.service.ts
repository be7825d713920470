import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { announceAuthChange, type AuthCache } from '../../auth/auth-changes.ts';
import { notFound, userTaken, usernameCooldown } from '../../errors/errors.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import type { SessionService } from '../sessions/session.service.ts';
import { isUuid, parseInput } from '../validation.ts';
import { username } from './user-input.ts';
import { User } from './user.entity.ts';
import { userView, type UserView } from './user-view.ts';

export const updateMeSchema = z.strictObject({
  username: username.optional().meta({ description: 'Once per cool-down (USERNAME_CHANGE_COOLDOWN_DAYS); 429 error.user.usernameCooldown sooner.' }),
  image: z.url({ protocol: /^https?$/ }).max(2048).nullable().optional(),
  welcomeScreen: z.boolean().optional(),
});

/** Global (operator-level) permissions: names of 1-64 of a-z 0-9 . _ -, distinct from team permissions. */
export const userPermissionsSchema = z.strictObject({
  permissions: z.array(z.string().regex(/^[a-z0-9._-]{1,64}$/, 'must be 1-64 characters of a-z 0-9 . _ -')).max(64),
});

/** A user's own record and the operator's changes to it (disable, enable, global permissions). */
export class UserProfileService {
  private readonly orm: MikroORM;
  private readonly sessions: SessionService;
  private readonly authCache: AuthCache;
  private readonly usernameCooldownMs: number;

  constructor(options: { orm: MikroORM; sessions: SessionService; authCache: AuthCache; usernameCooldownSeconds: number }) {
    this.orm = options.orm;
    this.sessions = options.sessions;
    this.authCache = options.authCache;
    this.usernameCooldownMs = options.usernameCooldownSeconds * 1000;
  }

  async get(userId: string): Promise<UserView> {
    const user = isUuid(userId) ? await this.orm.em.fork().findOne(User, { id: userId }) : null;
    if (!user) throw notFound('user', userId);
    return userView(user);
  }

  async update(userId: string, input: unknown): Promise<UserView> {
    const changes = parseInput(updateMeSchema, input);
    try {
      return await this.orm.em.fork().transactional(async (em) => {
        const user = await em.findOneOrFail(User, { id: userId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
        if (changes.username !== undefined && changes.username !== user.username) {
          const allowedAt = new Date(user.changedUsernameAt.getTime() + this.usernameCooldownMs);
          if (allowedAt.getTime() > Date.now()) throw usernameCooldown(Math.ceil((allowedAt.getTime() - Date.now()) / 1000), allowedAt);
          const [taken] = await em.getConnection().execute<{ id: string }[]>(`select id from "user" where lower(username) = lower(?) and id <> ?`, [changes.username, userId]);
          if (taken) throw userTaken('username');
          user.username = changes.username;
          user.changedUsernameAt = new Date();
        }
        if (changes.image !== undefined) user.image = changes.image;
        if (changes.welcomeScreen !== undefined) user.welcomeScreen = changes.welcomeScreen;
        await em.flush();
        return userView(user);
      });
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) throw userTaken('username');
      throw error;
    }
  }

  /** The teams the user is a current member of, with its member id there (where its session token acts). */
  async teams(userId: string) {
    const members = await this.orm.em.fork().find(
      TeamMember, { user: userId, leftTeamAt: null, archived: false }, { populate: ['team'], orderBy: { joinedTeamAt: 'asc' } },
    );
    return members.map((member) => ({
      team: { id: member.team.id, name: member.team.name, logo: member.team.logo ?? null, priceId: member.team.priceId ?? null },
      memberId: member.id,
      name: member.name,
      isTeamOwner: member.isTeamOwner,
      joinedTeamAt: member.joinedTeamAt.toISOString(),
    }));
  }

  /**
   * Disables or enables a user. Disabling ends its sessions and stops the keys linked to its
   * memberships at once, on every instance (the key lookup checks the user; its teams' cached keys
   * are dropped through the auth-changes channel).
   */
  async setDisabled(userId: string, disabled: boolean): Promise<UserView> {
    if (!isUuid(userId)) throw notFound('user', userId);
    const { view, teamIds } = await this.orm.em.fork().transactional(async (em) => {
      const user = await em.findOne(User, { id: userId });
      if (!user) throw notFound('user', userId);
      user.disabled = disabled;
      user.disabledAt = disabled ? new Date() : null;
      await em.flush();
      if (disabled) await this.sessions.revokeAll(userId, em);
      const teamIds = (await em.find(TeamMember, { user }, { fields: ['team'] })).map((member) => member.team.id);
      for (const teamId of teamIds) await announceAuthChange(em, teamId);
      return { view: userView(user), teamIds };
    });
    this.sessions.forget(userId);
    for (const teamId of teamIds) this.authCache.invalidateTeam(teamId);
    return view;
  }

  async setPermissions(userId: string, input: unknown): Promise<UserView> {
    const { permissions } = parseInput(userPermissionsSchema, input);
    if (!isUuid(userId)) throw notFound('user', userId);
    return this.orm.em.fork().transactional(async (em) => {
      const user = await em.findOne(User, { id: userId });
      if (!user) throw notFound('user', userId);
      user.permissions = [...new Set(permissions)];
      await em.flush();
      return userView(user);
    });
  }
}
