import { createHash, randomBytes } from 'node:crypto';

/**
 * A session token reads `tss_<43 base64url characters>` (256 random bits). Only its SHA-256 is
 * stored: with that much entropy a slow hash adds latency and no safety. The prefix tells it apart
 * from a team API key (`tws_...`) on the routes that take both.
 */
const TOKEN_PATTERN = /^tss_[A-Za-z0-9_-]{43}$/;

export function generateSessionToken(): { token: string; tokenHash: string } {
  const token = `tss_${randomBytes(32).toString('base64url')}`;
  return { token, tokenHash: hashSessionToken(token) };
}

export function hashSessionToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export function isSessionToken(token: string): boolean {
  return token.startsWith('tss_');
}

export function isWellFormedSessionToken(token: string): boolean {
  return TOKEN_PATTERN.test(token);
}
