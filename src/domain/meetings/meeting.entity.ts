import { defineEntity, p } from '@mikro-orm/core';
import { BaseSchema } from '../base.entity.ts';
import { Group } from '../groups/group.entity.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import { Team } from '../teams/team.entity.ts';
import { MEETING_STATES } from './meeting-states.ts';

/** Meeting of spec 2.15 (Migration20261130010000Meetings); its state moves only as meeting-states.ts allows. */
export const MeetingSchema = defineEntity({
  name: 'Meeting',
  extends: BaseSchema,
  indexes: [{ name: 'meeting_team_state_idx', properties: ['team', 'state'] }, { name: 'meeting_team_date_time_idx', properties: ['team', 'dateTime'] }],
  properties: {
    team: () => p.manyToOne(Team).deleteRule('cascade'),
    title: p.string().length(200).check('length(title) >= 1'),
    dateTime: p.datetime(),
    agenda: p.text().nullable(),
    meetingPoint: p.string().length(200).nullable(),
    protocol: p.text().nullable(),
    state: p.string().length(16).default('PLANNED').check(`state in (${MEETING_STATES.map((state) => `'${state}'`).join(', ')})`),
    startedAt: p.datetime().nullable(),
    endedAt: p.datetime().nullable(),
    cancelledAt: p.datetime().nullable(),
    creatorTeamMember: () => p.manyToOne(TeamMember).nullable().deleteRule('set null'),
  },
});

export class Meeting extends MeetingSchema.class {}
MeetingSchema.setClass(Meeting);

/** A member taking part in a meeting (directly; its groups' members take part too). */
export const MeetingMemberSchema = defineEntity({
  name: 'MeetingMember',
  properties: {
    meeting: () => p.manyToOne(Meeting).primary().deleteRule('cascade'),
    teamMember: () => p.manyToOne(TeamMember).primary().deleteRule('cascade').index(),
  },
});

export class MeetingMember extends MeetingMemberSchema.class {}
MeetingMemberSchema.setClass(MeetingMember);

/** A group whose members take part in a meeting. */
export const MeetingGroupSchema = defineEntity({
  name: 'MeetingGroup',
  properties: {
    meeting: () => p.manyToOne(Meeting).primary().deleteRule('cascade'),
    group: () => p.manyToOne(Group).primary().deleteRule('cascade').index(),
  },
});

export class MeetingGroup extends MeetingGroupSchema.class {}
MeetingGroupSchema.setClass(MeetingGroup);
