import { z } from 'zod';
import { CREDENTIAL_PROVIDER } from './account.entity.ts';

/** Game accounts a user states by hand (spec 2.6): nothing signs in with them; teams may require them (spec 2.11). */
export const MANUAL_PROVIDERS = ['minecraft-manual', 'hytale-manual'] as const;
export type ManualProviderId = (typeof MANUAL_PROVIDERS)[number];

/** Linked accounts that sign a user in: the email and password account, and the OAuth providers. */
export const SIGN_IN_PROVIDERS = [CREDENTIAL_PROVIDER, 'discord', 'google'] as const;

/** Mojang's rules for Java Edition names; Hytale's are the same 3-16 of letters, digits and underscore. */
const GAME_USERNAME = /^[A-Za-z0-9_]{3,16}$/;
/** A player profile UUID, with or without dashes (as Mojang's APIs give it); stored lower case with dashes. */
const PLAYER_UUID = /^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$/;

const normaliseUuid = (value: string) => {
  const hex = value.replace(/-/g, '').toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
};

const gameData = (game: string) =>
  z.strictObject({
    username: z.string().regex(GAME_USERNAME, `must be a ${game} name: 3-16 characters of a-z A-Z 0-9 _`),
    targetId: z.string().regex(PLAYER_UUID, `must be the ${game} player's UUID (32 hex digits, dashes optional)`).transform(normaliseUuid),
  });

/** The `data` of each manual game account (spec 2.6: `username` and `targetId`, both required). */
export const manualDataSchemas = {
  'minecraft-manual': gameData('Minecraft'),
  'hytale-manual': gameData('Hytale'),
} as const;

const linkVariant = <P extends ManualProviderId>(providerId: P) =>
  z.strictObject({
    providerId: z.literal(providerId),
    accountId: z.string().optional().meta({ description: 'If given, must equal data.targetId (the account id is the player UUID).' }),
    data: manualDataSchemas[providerId],
  });

/** POST /v1/users/me/accounts: a manual game account, validated per providerId. */
export const linkManualAccountSchema = z.discriminatedUnion('providerId', [linkVariant('minecraft-manual'), linkVariant('hytale-manual')]);

export function isManualProvider(value: unknown): value is ManualProviderId {
  return typeof value === 'string' && (MANUAL_PROVIDERS as readonly string[]).includes(value);
}

export function isSignInProvider(providerId: string): boolean {
  return (SIGN_IN_PROVIDERS as readonly string[]).includes(providerId);
}

/** What a team join requirement (spec 2.11) is met by. */
export const REQUIREMENT_PROVIDERS = {
  discord: 'discord',
  google: 'google',
  minecraft: 'minecraft-manual',
  hytale: 'hytale-manual',
} as const;

/** Minimal account info (spec 2.6): never tokens, never the password. */
export function minimalAccountView(account: { accountId: string; providerId: string; data?: Record<string, unknown> | null }) {
  return { accountId: account.accountId, providerId: account.providerId, data: account.data ?? null };
}
