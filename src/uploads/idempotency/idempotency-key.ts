import { createHash } from 'node:crypto';
import { badRequest } from '../../errors/errors.ts';

/** 1-255 printable ASCII characters (API additions, idempotent uploads). */
const KEY_PATTERN = /^[\x20-\x7e]{1,255}$/;

/** The `Idempotency-Key` header's value; null when the request has none; 400 when it is not 1-255 printable ASCII characters. */
export function parseIdempotencyKey(value: string | undefined): string | null {
  if (value === undefined) return null;
  if (!KEY_PATTERN.test(value)) {
    throw badRequest('Idempotency-Key must be 1-255 printable ASCII characters', 'Idempotency-Key');
  }
  return value;
}

/**
 * A fingerprint of what a request asks for: SHA-256 of its canonical JSON (object keys sorted,
 * so the order in which a client wrote its options does not matter; array order does).
 */
export function fingerprintOf(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, field]) => field !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([name, field]) => `${JSON.stringify(name)}:${canonicalJson(field)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}
