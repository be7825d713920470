import { createHmac } from 'node:crypto';
import { deriveLinkKey } from '../media/signed-links.ts';

/** The HKDF label of the author key: derived from the operator secret, usable for nothing else. */
const AUTHOR_KEY_LABEL = 'worry-box-author/v1';

/**
 * The author tag of an anonymous worry box entry: HMAC-SHA256 of `<teamId>:<memberId>` under a key
 * derived from the operator secret (AUTH_SECRET, or DATA_DIR/auth-secret). The service computes the
 * caller's tag to find the caller's own entries; the database, its exports and backups hold only
 * the tag, which names no one without the secret.
 */
export class WorryBoxAuthorTags {
  private readonly key: Buffer;

  constructor(secret: string) {
    if (!secret) throw new Error('WorryBoxAuthorTags needs a non-empty secret');
    this.key = deriveLinkKey(secret, AUTHOR_KEY_LABEL);
  }

  of(teamId: string, memberId: string): string {
    return createHmac('sha256', this.key).update(`${teamId}:${memberId}`).digest('hex');
  }
}
