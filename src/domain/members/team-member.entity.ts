import { defineEntity, p } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { Group } from '../groups/group.entity.ts';
import { Team } from '../teams/team.entity.ts';
import { User } from '../users/user.entity.ts';

export const TeamMemberSchema = defineEntity({
  name: 'TeamMember',
  // A user is a member of a team once (a rejoin reactivates its row); a name is unique among current
  // members only: the partial index team_member_team_id_name_active_unique (Migration20261124040100ActiveMemberNames).
  uniques: [{ properties: ['team', 'user'] }],
  properties: {
    id: p.uuid().primary().onCreate(() => randomUUID()),
    team: () => p.manyToOne(Team).deleteRule('cascade'),
    user: () => p.manyToOne(User).deleteRule('cascade').index(),
    name: p.string().length(20).check("name ~ '^[a-zA-Z0-9_]{3,20}$'"),
    image: p.text().nullable(),
    personalNote: p.text().default(''),
    mainGroup: () => p.manyToOne(Group).nullable().deleteRule('set null'),
    permissions: p.array().default([]),
    sort: p.integer().default(0),
    createdAt: p.datetime().onCreate(() => new Date()),
    isTeamOwner: p.boolean().default(false),
    lastSelection: p.datetime().nullable(),
    totalSelections: p.integer().default(0),
    joinedTeamAt: p.datetime().onCreate(() => new Date()),
    leftTeamAt: p.datetime().nullable(),
    archived: p.boolean().default(false),
    adminExpiresAt: p.datetime().nullable(),
    adminJoinedAt: p.datetime().nullable(),
  },
});

export class TeamMember extends TeamMemberSchema.class {}
TeamMemberSchema.setClass(TeamMember);

/** A member's membership in a group; its permissions add to the member's own. */
export const TeamMemberGroupSchema = defineEntity({
  name: 'TeamMemberGroup',
  properties: {
    member: () => p.manyToOne(TeamMember).primary().deleteRule('cascade'),
    group: () => p.manyToOne(Group).primary().deleteRule('cascade').index(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});

export class TeamMemberGroup extends TeamMemberGroupSchema.class {}
TeamMemberGroupSchema.setClass(TeamMemberGroup);
