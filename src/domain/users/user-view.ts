import type { User } from './user.entity.ts';

/** A user as spec 2.5 shapes it. Credentials live in its accounts and never appear here. */
export function userView(user: User) {
  return {
    id: user.id,
    username: user.username,
    changedUsernameAt: user.changedUsernameAt.toISOString(),
    email: user.email,
    emailVerified: user.emailVerified?.toISOString() ?? null,
    isEmailVerified: user.isEmailVerified,
    image: user.image ?? null,
    stripeCustomerId: user.stripeCustomerId ?? null,
    coins: user.coins,
    createdAt: user.createdAt.toISOString(),
    updatedAt: user.updatedAt.toISOString(),
    lastLoginAt: user.lastLoginAt.toISOString(),
    disabled: user.disabled,
    disabledAt: user.disabledAt?.toISOString() ?? null,
    welcomeScreen: user.welcomeScreen,
    permissions: user.permissions,
    migrated: user.migrated,
    migratedId: user.migratedId ?? null,
  };
}

export type UserView = ReturnType<typeof userView>;
