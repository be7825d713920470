import type { EntityManager } from '@mikro-orm/postgresql';
import { Group } from '../groups/group.entity.ts';
import { memberShortInfo } from '../members/member-short-info.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import { groupView } from '../views.ts';

/**
 * When an assignment is in force, as SQL (one `?`: now). Expired assignments are filtered out of
 * every read instead of deleted by a job, so no instance races another over them. A member's
 * assignment counts only while it is a member, and only if made since it last joined: one who
 * leaves and comes back through an invite starts without its old accesses (docs/team-admin.md,
 * "Rejoining").
 */
export function activeMemberAssignments(assignment: string, member: string): string {
  return `(${assignment}.expires_at is null or ${assignment}.expires_at > ?) and ${member}.left_team_at is null and ${assignment}.assigned_at >= ${member}.joined_team_at`;
}

/** When a group assignment is in force, as SQL (one `?`: now). */
export function activeGroupAssignments(assignment: string): string {
  return `(${assignment}.expires_at is null or ${assignment}.expires_at > ?)`;
}

export interface AssignmentRow {
  id: string;
  access_id: string;
  team_member_id?: string;
  group_id?: string;
  note: string | null;
  assigned_at: Date;
  expires_at: Date | null;
  assigned_by_id: string | null;
}

const iso = (value: Date | null) => (value ? new Date(value).toISOString() : null);

async function membersById(em: EntityManager, ids: (string | null | undefined)[]): Promise<Map<string, TeamMember>> {
  const wanted = [...new Set(ids.filter((id): id is string => typeof id === 'string'))];
  const members = wanted.length > 0 ? await em.find(TeamMember, { id: { $in: wanted } }) : [];
  return new Map(members.map((member) => [member.id, member]));
}

function common(row: AssignmentRow, members: Map<string, TeamMember>) {
  return {
    id: row.id, accessId: row.access_id, note: row.note, assignedAt: iso(row.assigned_at)!, expiresAt: iso(row.expires_at),
    assignedById: row.assigned_by_id, assignedBy: memberShortInfo(row.assigned_by_id ? members.get(row.assigned_by_id) : null),
  };
}

/** Access assignments of spec 2.16 (member variant) from their rows. */
export async function memberAssignmentView(em: EntityManager, rows: AssignmentRow[]) {
  const members = await membersById(em, rows.flatMap((row) => [row.team_member_id, row.assigned_by_id]));
  return rows.map((row) => {
    const { assignedBy, ...rest } = common(row, members);
    return { ...rest, teamMemberId: row.team_member_id!, teamMember: memberShortInfo(members.get(row.team_member_id!))!, assignedBy };
  });
}

/** Access assignments of spec 2.16 (group variant) from their rows. */
export async function groupAssignmentView(em: EntityManager, rows: AssignmentRow[]) {
  const members = await membersById(em, rows.map((row) => row.assigned_by_id));
  const wanted = [...new Set(rows.map((row) => row.group_id!))];
  const groups = new Map((wanted.length > 0 ? await em.find(Group, { id: { $in: wanted } }) : []).map((group) => [group.id, group]));
  return rows.map((row) => {
    const { assignedBy, ...rest } = common(row, members);
    return { ...rest, groupId: row.group_id!, group: groupView(groups.get(row.group_id!)!), assignedBy };
  });
}
