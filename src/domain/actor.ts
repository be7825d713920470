/**
 * Who made a change, for the team log: the member the key acts as (its linked member, or the owner
 * for a key linked to none), or null for the operator and the service's own jobs, which are no member.
 */
export interface Actor {
  teamMemberId: string | null;
}
