/** Who a media request acts as: resolved from its API key. */
export interface Principal {
  keyId: string;
  teamId: string;
  /** The member the key is linked to; null for a key that acts as the owner. */
  memberId: string | null;
  /**
   * Who the team log names for this key's actions (spec 2.19 requires a teamMember): the linked
   * member, or the owner for a key that acts as the owner; null only for a team without an owner.
   */
  actingMemberId: string | null;
  permissions: ReadonlySet<string>;
  /** Whether the key's team is archived: its keys then only read (docs/team-admin.md). */
  teamArchived: boolean;
  /** Empty for a full key. */
  scopes: readonly string[];
}
