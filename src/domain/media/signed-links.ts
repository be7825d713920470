import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/** Spec 8: a signed link is valid for one hour. */
export const SIGNED_LINK_TTL_SECONDS = 3600;

/** The HKDF label: a key for signing links, never usable as the operator secret itself. */
const KEY_LABEL = 'media-signed-links/v1';
/** Unix seconds as `sign` writes them: no sign, no leading zero, so one expiry has one spelling. */
const EXPIRES_PATTERN = /^[1-9]\d{0,11}$/;
/** 32 bytes of HMAC-SHA256 in base64url without padding. */
const SIGNATURE_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export interface SignedLinksOptions {
  /** The operator secret (AUTH_SECRET); the signing key is derived from it. */
  secret: string;
  /** Milliseconds since the epoch; tests pass a clock they can move. */
  now?: () => number;
  /** The longest validity: `sign`'s default, and `verify` refuses an expiry further ahead. */
  ttlSeconds?: number;
  /** The HKDF label of the signing key; one per kind of signed thing, so a signature of one kind never passes as another. */
  label?: string;
}

export type SignatureCheck =
  | { valid: true; expires: number; secondsLeft: number }
  | { valid: false; reason: 'malformed' | 'mismatch' | 'expired' };

/** Derives the signing key: HKDF-SHA256 of the operator secret with a fixed label. */
export function deriveLinkKey(secret: string, label: string = KEY_LABEL): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), Buffer.alloc(0), Buffer.from(label), 32));
}

/**
 * HMAC-SHA256 links for private files: the signature covers the path (e.g.
 * `media/team/<teamId>/<file>`, without a leading slash) and the expiry, so
 * changing either, or the signature, invalidates the link.
 */
export class SignedLinks {
  readonly ttlSeconds: number;
  private readonly key: Buffer;
  private readonly clock: () => number;

  constructor(options: SignedLinksOptions) {
    if (!options.secret) throw new Error('SignedLinks needs a non-empty secret');
    this.key = deriveLinkKey(options.secret, options.label);
    this.clock = options.now ?? Date.now;
    this.ttlSeconds = options.ttlSeconds ?? SIGNED_LINK_TTL_SECONDS;
  }

  /** Unix seconds now, by the injected clock. */
  nowSeconds(now: number = this.clock()): number {
    return Math.floor(now / 1000);
  }

  /** `?expires=<unix seconds>&signature=<base64url>` for `path`, valid for ttlSeconds from `now` (ms). */
  sign(path: string, now: number = this.clock()): string {
    return this.signUntil(path, this.nowSeconds(now) + this.ttlSeconds);
  }

  /** `?expires=<expires>&signature=<base64url>` for `path`, with the expiry given in unix seconds (verify refuses one past ttlSeconds ahead). */
  signUntil(path: string, expires: number): string {
    return `?expires=${expires}&signature=${this.signature(path, expires).toString('base64url')}`;
  }

  /** Checks a link's parts in constant time (for the signature); `now` in ms. */
  verify(path: string, expires: string | null | undefined, signature: string | null | undefined, now: number = this.clock()): SignatureCheck {
    if (typeof expires !== 'string' || typeof signature !== 'string' || !EXPIRES_PATTERN.test(expires) || !SIGNATURE_PATTERN.test(signature)) {
      return { valid: false, reason: 'malformed' };
    }
    const expiresAt = Number(expires);
    // Compared as text: base64url has several spellings of the last character's unused bits; only the canonical one counts.
    const presented = Buffer.from(signature, 'latin1');
    const expected = Buffer.from(this.signature(path, expiresAt).toString('base64url'), 'latin1');
    // The comparison runs before the expiry check, so timing does not tell an expired link from a forged one.
    const matches = presented.length === expected.length && timingSafeEqual(presented, expected);
    if (!matches) return { valid: false, reason: 'mismatch' };
    const secondsLeft = expiresAt - this.nowSeconds(now);
    // Also refuses an expiry further ahead than this service ever signs (a longer TTL of another configuration).
    if (secondsLeft <= 0 || secondsLeft > this.ttlSeconds) return { valid: false, reason: 'expired' };
    return { valid: true, expires: expiresAt, secondsLeft };
  }

  private signature(path: string, expires: number): Buffer {
    // A separator that cannot occur in a path keeps (path, expires) pairs unambiguous.
    return createHmac('sha256', this.key).update(`${path}\n${expires}`).digest();
  }
}
