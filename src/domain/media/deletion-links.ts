import { createHmac, timingSafeEqual } from 'node:crypto';
import { deriveLinkKey } from './signed-links.ts';

/** The HKDF label: a key of its own, so no other signed link (file, upload URL, export) passes as a deletion link. */
const KEY_LABEL = 'media-deletion-links/v1';
/** 32 bytes of HMAC-SHA256 in base64url without padding. */
const SIGNATURE_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/**
 * Single-purpose links that delete one media file (ShareX's DeletionURL): the signature covers the
 * team and the file, nothing else. They do not expire (people delete a screenshot days or months
 * later); a link is spent when its file is gone, and media ids are never reused. Changing AUTH_SECRET
 * voids every link.
 */
export class DeletionLinks {
  private readonly key: Buffer;
  private readonly publicUrl: string;

  constructor(options: { secret: string; publicUrl: string }) {
    if (!options.secret) throw new Error('DeletionLinks needs a non-empty secret');
    this.key = deriveLinkKey(options.secret, KEY_LABEL);
    this.publicUrl = options.publicUrl.replace(/\/+$/, '');
  }

  /** The absolute deletion link of a team's file. */
  url(teamId: string, mediaId: string): string {
    return `${this.publicUrl}/v1/cdn/media/${teamId}/deletion-links/${mediaId}?signature=${this.signature(teamId, mediaId)}`;
  }

  /** True when `signature` is the one this service gives for the team's file (compared in constant time). */
  verify(teamId: string, mediaId: string, signature: string | null | undefined): boolean {
    if (typeof signature !== 'string' || !SIGNATURE_PATTERN.test(signature)) return false;
    // Compared as text: only the canonical base64url spelling counts.
    const presented = Buffer.from(signature, 'latin1');
    const expected = Buffer.from(this.signature(teamId, mediaId), 'latin1');
    return presented.length === expected.length && timingSafeEqual(presented, expected);
  }

  private signature(teamId: string, mediaId: string): string {
    // Ids never hold a newline, so (team, file) pairs are unambiguous.
    return createHmac('sha256', this.key).update(`delete\n${teamId}\n${mediaId}`).digest('base64url');
  }
}
