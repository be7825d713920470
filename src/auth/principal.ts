/** Who a team or media request acts as: resolved from its team API key or from a user's session token. */
export interface Principal {
  /** The API key; null for a session. */
  keyId: string | null;
  /** The session; null for an API key. */
  sessionId: string | null;
  /** The key's prefix: which secret it presented (a reroll changes it); null for a session. */
  keyPrefix: string | null;
  /** The session's user; null for an API key. */
  userId: string | null;
  /** What the per-caller rate limit counts against: the key, or the session. */
  rateLimitKey: string;
  teamId: string;
  /** The member the key is linked to, or the session's user's member; null for a key that acts as the owner. */
  memberId: string | null;
  /**
   * Who the team log names for this key's actions (spec 2.19 requires a teamMember): the linked
   * member, or the owner for a key that acts as the owner; null only for a team without an owner.
   */
  actingMemberId: string | null;
  permissions: ReadonlySet<string>;
  /** Whether the key's team is archived: its keys then only read (docs/team-admin.md). */
  teamArchived: boolean;
  /** Empty for a full key and for a session. */
  scopes: readonly string[];
}
