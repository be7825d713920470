import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { announceUserAuthChange } from '../../auth/auth-changes.ts';
import { generateSessionToken } from '../../auth/session-token.ts';
import { notFound, userDisabled } from '../../errors/errors.ts';
import { User } from '../users/user.entity.ts';
import { userView, type UserView } from '../users/user-view.ts';
import { isUuid } from '../validation.ts';
import { UserSession } from './user-session.entity.ts';

export type SignInMethod = 'password' | 'discord' | 'google' | 'launcher';

export interface SessionOrigin {
  method: SignInMethod;
  ip: string | null;
  userAgent: string | null;
}

export interface IssuedSession {
  /** The bearer token, shown only here. */
  token: string;
  expiresAt: string;
  session: SessionView;
  user: UserView;
}

/** Drops what this instance remembers of a user's sessions (the other instances hear it through the auth-changes channel). */
export interface UserSessionCache {
  invalidateUser(userId: string): void;
}

function sessionView(session: UserSession, currentSessionId?: string) {
  return {
    id: session.id,
    method: session.method,
    createdAt: session.createdAt.toISOString(),
    lastUsedAt: session.lastUsedAt.toISOString(),
    expiresAt: session.expiresAt.toISOString(),
    ip: session.ip ?? null,
    userAgent: session.userAgent ?? null,
    current: session.id === currentSessionId,
  };
}

export type SessionView = ReturnType<typeof sessionView>;

/** Signed-in sessions of users: issued by every way of signing in, listed and revoked by their user. */
export class SessionService {
  private readonly orm: MikroORM;
  private readonly cache: UserSessionCache;
  private readonly ttlMs: number;

  constructor(options: { orm: MikroORM; cache: UserSessionCache; ttlSeconds: number }) {
    this.orm = options.orm;
    this.cache = options.cache;
    this.ttlMs = options.ttlSeconds * 1000;
  }

  /** A new session for a user who proved who they are; refuses a disabled user (403). Sets lastLoginAt. */
  async issue(userId: string, origin: SessionOrigin, em?: EntityManager): Promise<IssuedSession> {
    const run = async (em: EntityManager) => {
      const user = await em.findOneOrFail(User, { id: userId });
      if (user.disabled) throw userDisabled();
      const { token, tokenHash } = generateSessionToken();
      const now = new Date();
      const session = em.create(UserSession, {
        user, tokenHash, method: origin.method, createdAt: now, lastUsedAt: now, expiresAt: new Date(now.getTime() + this.ttlMs),
        ip: origin.ip?.slice(0, 64) ?? null, userAgent: origin.userAgent?.slice(0, 512) ?? null,
      });
      user.lastLoginAt = now;
      await em.flush();
      return { token, expiresAt: session.expiresAt.toISOString(), session: sessionView(session, session.id), user: userView(user) };
    };
    return em ? run(em) : this.orm.em.fork().transactional(run);
  }

  async list(userId: string, currentSessionId: string): Promise<SessionView[]> {
    const sessions = await this.orm.em.fork().find(UserSession, { user: userId, expiresAt: { $gt: new Date() } }, { orderBy: { lastUsedAt: 'desc' } });
    return sessions.map((session) => sessionView(session, currentSessionId));
  }

  /** Revokes one of the user's sessions (404 for another user's or an unknown one). */
  async revoke(userId: string, sessionId: string): Promise<void> {
    const deleted = await this.revokeWhere(userId, isUuid(sessionId) ? { id: sessionId } : null);
    if (deleted === 0) throw notFound('session', sessionId);
  }

  /** Revokes every session of the user but `exceptSessionId`; answers how many. */
  revokeOthers(userId: string, exceptSessionId: string): Promise<number> {
    return this.revokeWhere(userId, { id: { $ne: exceptSessionId } });
  }

  /** Revokes every session of the user, in `em`'s transaction when given (password change, disable). */
  async revokeAll(userId: string, em?: EntityManager): Promise<number> {
    if (!em) return this.revokeWhere(userId, {});
    const deleted = await em.nativeDelete(UserSession, { user: userId });
    await announceUserAuthChange(em, userId);
    return deleted;
  }

  /** After a transaction that revoked a user's sessions (revokeAll with `em`) committed: this instance forgets them at once. */
  forget(userId: string): void {
    this.cache.invalidateUser(userId);
  }

  private async revokeWhere(userId: string, where: Record<string, unknown> | null): Promise<number> {
    if (where === null) return 0;
    const deleted = await this.orm.em.fork().transactional(async (em) => {
      const count = await em.nativeDelete(UserSession, { user: userId, ...where });
      if (count > 0) await announceUserAuthChange(em, userId);
      return count;
    });
    // At once on this instance, without waiting for the notification to come back.
    this.cache.invalidateUser(userId);
    return deleted;
  }
}
