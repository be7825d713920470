import { defineEntity, p } from '@mikro-orm/core';
import { BaseSchema } from '../base.entity.ts';
import { User } from '../users/user.entity.ts';

/** The service's own provider: email and password, the scrypt hash in `password`. */
export const CREDENTIAL_PROVIDER = 'credential';

/** A linked login of a user (spec 2.6): one per provider and user, one user per provider account. */
export const AccountSchema = defineEntity({
  name: 'Account',
  tableName: 'account',
  extends: BaseSchema,
  properties: {
    user: () => p.manyToOne(User).deleteRule('cascade'),
    type: p.string().length(32).default('oauth'),
    providerId: p.string().length(64),
    accountId: p.string().length(255),
    expiresAt: p.datetime().nullable(),
    accessToken: p.text().nullable(),
    refreshToken: p.text().nullable(),
    accessTokenExpiresAt: p.datetime().nullable(),
    refreshTokenExpiresAt: p.datetime().nullable(),
    /** The credential provider's scrypt hash; never leaves the service. */
    password: p.text().nullable(),
    scope: p.text().nullable(),
    idToken: p.text().nullable(),
    data: p.json<Record<string, unknown>>().nullable(),
  },
});

export class Account extends AccountSchema.class {}
AccountSchema.setClass(Account);
