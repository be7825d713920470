import type { TeamMember } from './team-member.entity.ts';

/** Member short info of spec 2.13 (`id`, `userId`, `name`, `image`, `joinedTeamAt`); null for no member. The user must be loaded or referenced. */
export function memberShortInfo(member: TeamMember | null | undefined) {
  return member ? { id: member.id, userId: member.user.id, name: member.name, image: member.image ?? null, joinedTeamAt: member.joinedTeamAt.toISOString() } : null;
}
