import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * An API key reads `tws_<prefix>_<secret>`. The prefix is not secret: it finds
 * the key's row (unique index) without a scan and without revealing anything.
 * The row keeps only the SHA-256 of the whole key; the key has 256 bits of
 * entropy, so a slow password hash would add latency and no safety.
 */
const KEY_PATTERN = /^tws_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

export interface GeneratedKey {
  key: string;
  prefix: string;
  secretHash: string;
}

export function generateApiKey(): GeneratedKey {
  const prefix = randomBytes(8).toString('hex');
  const key = `tws_${prefix}_${randomBytes(32).toString('base64url')}`;
  return { key, prefix, secretHash: hashApiKey(key) };
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** The prefix of a well-formed key, or null. */
export function apiKeyPrefix(key: string): string | null {
  return KEY_PATTERN.exec(key)?.[1] ?? null;
}

export function apiKeyMatches(key: string, secretHash: string): boolean {
  if (!/^[0-9a-f]{64}$/.test(secretHash)) return false;
  const presented = Buffer.from(hashApiKey(key), 'hex');
  const stored = Buffer.from(secretHash, 'hex');
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}
