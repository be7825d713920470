import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Webhook signatures, in the scheme Stripe and others use: the header
 * `X-Media-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`
 * keyed with the automation's secret. The timestamp inside the signed text lets
 * a receiver refuse replays of old requests.
 */

export const SIGNATURE_HEADER = 'x-media-signature';
export const SECRET_PREFIX = 'whsec_';
/** A receiver should refuse signatures older (or newer) than this; what verifySignature uses by default. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** 256 random bits, base64url: `whsec_...`. */
export function generateSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64url')}`;
}

export function signatureDigest(secret: string, timestamp: number, body: string | Buffer): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
}

/** The value of the signature header for `body` sent at `timestamp` (unix seconds). */
export function signatureHeader(secret: string, timestamp: number, body: string | Buffer): string {
  return `t=${timestamp},v1=${signatureDigest(secret, timestamp, body)}`;
}

export interface VerifyOptions {
  toleranceSeconds?: number;
  /** Unix seconds; defaults to the clock. */
  now?: number;
}

/**
 * What a receiver does: parse the header, recompute the HMAC over the raw body
 * bytes, compare in constant time, and check the timestamp is recent. Any `v1`
 * entry may match (there is one today; several would allow secret rotation).
 */
export function verifySignature(secret: string, body: string | Buffer, header: string | undefined, options: VerifyOptions = {}): boolean {
  if (!header) return false;
  let timestamp: number | null = null;
  const candidates: string[] = [];
  for (const part of header.split(',')) {
    const [name, value] = part.trim().split('=', 2);
    if (name === 't' && value && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    else if (name === 'v1' && value && /^[0-9a-f]{64}$/.test(value)) candidates.push(value);
  }
  if (timestamp === null || candidates.length === 0) return false;
  const now = options.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > (options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) return false;
  const expected = Buffer.from(signatureDigest(secret, timestamp, body), 'hex');
  return candidates.some((candidate) => timingSafeEqual(Buffer.from(candidate, 'hex'), expected));
}
