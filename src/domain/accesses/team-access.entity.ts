import { defineEntity, p } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { Group } from '../groups/group.entity.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import { Team } from '../teams/team.entity.ts';

/** TeamAccess of spec 2.16: something the team hands out (a server, a panel, a document), to members directly or through groups. */
export const TeamAccessSchema = defineEntity({
  name: 'TeamAccess',
  properties: {
    id: p.uuid().primary().onCreate(() => randomUUID()),
    team: () => p.manyToOne(Team).deleteRule('cascade').index(),
    name: p.string().length(100).check('length(name) >= 1'),
    description: p.text().nullable(),
    icon: p.string().length(64).nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});

export class TeamAccess extends TeamAccessSchema.class {}
TeamAccessSchema.setClass(TeamAccess);

/**
 * An access given to one member. One row per access and member: an expired row counts nowhere
 * (every read filters expires_at) and is replaced by the next assignment (access-assignment.service.ts).
 */
export const TeamAccessAssignmentSchema = defineEntity({
  name: 'TeamAccessAssignment',
  uniques: [{ name: 'team_access_assignment_access_member_unique', properties: ['access', 'teamMember'] }],
  properties: {
    id: p.uuid().primary().onCreate(() => randomUUID()),
    team: () => p.manyToOne(Team).deleteRule('cascade').index(),
    access: () => p.manyToOne(TeamAccess).deleteRule('cascade'),
    teamMember: () => p.manyToOne(TeamMember).deleteRule('cascade').index(),
    note: p.text().nullable(),
    assignedAt: p.datetime().onCreate(() => new Date()),
    expiresAt: p.datetime().nullable(),
    assignedBy: () => p.manyToOne(TeamMember).nullable().deleteRule('set null'),
  },
});

export class TeamAccessAssignment extends TeamAccessAssignmentSchema.class {}
TeamAccessAssignmentSchema.setClass(TeamAccessAssignment);

/** An access given to every member of a group, for as long as they are in it. */
export const TeamAccessGroupAssignmentSchema = defineEntity({
  name: 'TeamAccessGroupAssignment',
  uniques: [{ name: 'team_access_group_assignment_access_group_unique', properties: ['access', 'group'] }],
  properties: {
    id: p.uuid().primary().onCreate(() => randomUUID()),
    team: () => p.manyToOne(Team).deleteRule('cascade').index(),
    access: () => p.manyToOne(TeamAccess).deleteRule('cascade'),
    group: () => p.manyToOne(Group).deleteRule('cascade').index(),
    note: p.text().nullable(),
    assignedAt: p.datetime().onCreate(() => new Date()),
    expiresAt: p.datetime().nullable(),
    assignedBy: () => p.manyToOne(TeamMember).nullable().deleteRule('set null'),
  },
});

export class TeamAccessGroupAssignment extends TeamAccessGroupAssignmentSchema.class {}
TeamAccessGroupAssignmentSchema.setClass(TeamAccessGroupAssignment);
