import { defineEntity, p } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { Meeting } from '../meetings/meeting.entity.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import { Team } from '../teams/team.entity.ts';

/** Logoff of spec 2.15: a member's announced absence, over a range, from a meeting, or both (Migration20261130010000Meetings). */
export const LogoffSchema = defineEntity({
  name: 'Logoff',
  indexes: [{ name: 'logoff_team_member_begin_idx', properties: ['teamMember', 'begin'] }],
  properties: {
    id: p.uuid().primary().onCreate(() => randomUUID()),
    team: () => p.manyToOne(Team).deleteRule('cascade').index(),
    teamMember: () => p.manyToOne(TeamMember).deleteRule('cascade'),
    meeting: () => p.manyToOne(Meeting).nullable().deleteRule('set null').index(),
    message: p.text().check('length(message) >= 1'),
    begin: p.datetime().nullable().fieldName('begin_at'),
    end: p.datetime().nullable().fieldName('end_at'),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});

export class Logoff extends LogoffSchema.class {}
LogoffSchema.setClass(Logoff);
