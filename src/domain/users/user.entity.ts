import { defineEntity, p } from '@mikro-orm/core';
import { BaseSchema } from '../base.entity.ts';

export const UserSchema = defineEntity({
  name: 'User',
  extends: BaseSchema,
  properties: {
    username: p.string().length(20).unique().check("username ~ '^[a-zA-Z0-9_]{3,20}$'"),
    changedUsernameAt: p.datetime().onCreate(() => new Date(0)),
    email: p.string().length(320).unique(),
    emailVerified: p.datetime().nullable(),
    isEmailVerified: p.boolean().default(false),
    image: p.text().nullable(),
    stripeCustomerId: p.string().length(255).nullable(),
    coins: p.integer().default(0),
    lastLoginAt: p.datetime().onCreate(() => new Date()),
    disabled: p.boolean().default(false),
    disabledAt: p.datetime().nullable(),
    welcomeScreen: p.boolean().default(true),
    permissions: p.array().default([]),
    migrated: p.boolean().default(false),
    migratedId: p.string().length(255).nullable(),
  },
});

export class User extends UserSchema.class {}
UserSchema.setClass(User);
