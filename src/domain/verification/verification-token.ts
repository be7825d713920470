import { createHash, randomBytes } from 'node:crypto';

/** The action types of spec 2.7 this service runs (GAME_DELETE: there are no games here). */
export const ACTION_TYPES = ['ACCOUNT_EMAIL_CHANGE', 'TEAM_OWNERSHIP_TRANSFER', 'TEAM_DELETE', 'ACCOUNT_DELETE', 'ACCOUNT_EXPORT'] as const;
export type ActionType = (typeof ACTION_TYPES)[number];

/**
 * Email verification rides on the same tokens (single use, hashed, expiring) under a type of its
 * own that no progress list shows: it is not an action the user asked for and waits on, and the
 * user record already says `isEmailVerified`.
 */
export const EMAIL_VERIFY = 'EMAIL_VERIFY';
export type TokenType = ActionType | typeof EMAIL_VERIFY;

/** `tvt_` and 32 random bytes in base64url: 256 bits, like the session tokens. */
const TOKEN_PATTERN = /^tvt_[A-Za-z0-9_-]{43}$/;

export function newToken(): string {
  return `tvt_${randomBytes(32).toString('base64url')}`;
}

export function isTokenShaped(token: unknown): token is string {
  return typeof token === 'string' && TOKEN_PATTERN.test(token);
}

/** Only this is stored: a token leaked from a backup or a log of the table confirms nothing. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export interface TokenRow {
  id: string;
  type: TokenType;
  userId: string;
  data: Record<string, unknown> | null;
  actionId: string;
  expiresAt: Date;
  usedAt: Date | null;
  locked: boolean;
  createdAt: Date;
}

/** Spec 2.7's progress variant: the token without `token` (which is never stored anyway). */
export function tokenProgressView(row: TokenRow) {
  return {
    id: row.id,
    type: row.type,
    userId: row.userId,
    data: row.data,
    createdAt: row.createdAt.toISOString(),
    usedAt: row.usedAt?.toISOString() ?? null,
    locked: row.locked,
  };
}
export type TokenProgress = ReturnType<typeof tokenProgressView>;
