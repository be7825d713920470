import { defineEntity, p } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { Team } from '../teams/team.entity.ts';
import { TeamMember } from './team-member.entity.ts';

/** TeamMemberNote of spec 2.13: a note about a member, written by another (or the operator: no creator). */
export const TeamMemberNoteSchema = defineEntity({
  name: 'TeamMemberNote',
  indexes: [{ name: 'team_member_note_member_created_idx', properties: ['teamMember', 'createdAt'] }],
  properties: {
    id: p.uuid().primary().onCreate(() => randomUUID()),
    team: () => p.manyToOne(Team).deleteRule('cascade').index(),
    teamMember: () => p.manyToOne(TeamMember).deleteRule('cascade'),
    note: p.text().check('length(note) >= 1'),
    creatorTeamMember: () => p.manyToOne(TeamMember).nullable().deleteRule('set null'),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});

export class TeamMemberNote extends TeamMemberNoteSchema.class {}
TeamMemberNoteSchema.setClass(TeamMemberNote);
