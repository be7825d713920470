import type { ApiKey } from './api-keys/api-key.entity.ts';
import type { Group } from './groups/group.entity.ts';
import type { TeamMember } from './members/team-member.entity.ts';
import type { Plan } from './plans/plan.entity.ts';
import type { Team } from './teams/team.entity.ts';

/** JSON shapes of the spec's schemas (section 2), built from entities. */

/** A timestamp column as ISO 8601, whether the driver gave a Date or text (raw SQL rows). */
export function timestampIso(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

function iso(date: Date | null | undefined): string | null {
  return date ? date.toISOString() : null;
}

function idOf(reference: { id: string } | null | undefined): string | null {
  return reference ? reference.id : null;
}

export function teamView(team: Team) {
  return {
    id: team.id,
    name: team.name,
    logo: team.logo ?? null,
    isActive: team.isActive,
    createdAt: iso(team.createdAt),
    updatedAt: iso(team.updatedAt),
    priceId: team.priceId ?? null,
    planId: idOf(team.plan),
    archived: team.archived,
    setup: team.setup,
    timezone: team.timezone,
    locale: team.locale,
    stripMetadata: team.stripMetadata,
  };
}

export function teamMemberView(member: TeamMember) {
  return {
    id: member.id,
    teamId: member.team.id,
    userId: member.user.id,
    name: member.name,
    image: member.image ?? null,
    personalNote: member.personalNote,
    mainGroupId: idOf(member.mainGroup),
    permissions: member.permissions,
    sort: member.sort,
    createdAt: iso(member.createdAt),
    isTeamOwner: member.isTeamOwner,
    lastSelection: iso(member.lastSelection),
    totalSelections: member.totalSelections,
    joinedTeamAt: iso(member.joinedTeamAt),
    leftTeamAt: iso(member.leftTeamAt),
    archived: member.archived,
    adminExpiresAt: iso(member.adminExpiresAt),
    adminJoinedAt: iso(member.adminJoinedAt),
  };
}

export function groupView(group: Group) {
  return {
    id: group.id,
    teamId: group.team.id,
    name: group.name,
    permissions: group.permissions,
    createdAt: iso(group.createdAt),
    updatedAt: iso(group.updatedAt),
    sort: group.sort,
    color: group.color,
  };
}

/** ApiKeyInfo of spec 2.18, plus the key's scopes. */
export function apiKeyInfoView(apiKey: ApiKey, member: TeamMember | null) {
  return {
    id: apiKey.id,
    teamId: apiKey.team.id,
    createdAt: iso(apiKey.createdAt),
    updatedAt: iso(apiKey.updatedAt),
    description: apiKey.description ?? null,
    teamMemberId: member ? member.id : null,
    teamMember: member ? { id: member.id, name: member.name } : null,
    scopes: apiKey.scopes,
  };
}

/** ApiKey of spec 2.18: the info plus the secret, which only creation and reroll reveal. */
export function apiKeyView(apiKey: ApiKey, member: TeamMember | null, key: string) {
  return { ...apiKeyInfoView(apiKey, member), key };
}

export function planView(plan: Plan) {
  return {
    id: plan.id,
    name: plan.name,
    slug: plan.slug,
    color: plan.color,
    level: plan.level,
    monthlyPriceIds: plan.monthlyPriceIds,
    yearlyPriceIds: plan.yearlyPriceIds,
    monthlyPrice: plan.monthlyPrice,
    yearlyPrice: plan.yearlyPrice,
    isPublic: plan.isPublic,
    isDefault: plan.isDefault,
    position: plan.position,
    limits: plan.limits,
    createdAt: iso(plan.createdAt),
    updatedAt: iso(plan.updatedAt),
  };
}
