/** Who a media request acts as: resolved from its API key. */
export interface Principal {
  keyId: string;
  teamId: string;
  /** The member the key is linked to; null for a key that acts as the owner. */
  memberId: string | null;
  permissions: ReadonlySet<string>;
  /** Empty for a full key. */
  scopes: readonly string[];
}
