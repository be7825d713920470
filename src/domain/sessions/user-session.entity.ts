import { defineEntity, p } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { User } from '../users/user.entity.ts';

/** A signed-in session: only the SHA-256 of its token is kept (src/auth/session-token.ts). */
export const UserSessionSchema = defineEntity({
  name: 'UserSession',
  tableName: 'user_session',
  properties: {
    id: p.uuid().primary().onCreate(() => randomUUID()),
    user: () => p.manyToOne(User).deleteRule('cascade'),
    tokenHash: p.string().length(64),
    /** How it was signed in: password, discord, google, launcher. */
    method: p.string().length(32),
    createdAt: p.datetime().onCreate(() => new Date()),
    lastUsedAt: p.datetime().onCreate(() => new Date()),
    expiresAt: p.datetime(),
    ip: p.string().length(64).nullable(),
    userAgent: p.string().length(512).nullable(),
  },
});

export class UserSession extends UserSessionSchema.class {}
UserSessionSchema.setClass(UserSession);
