import type { Group } from '../groups/group.entity.ts';
import type { TeamMember } from '../members/team-member.entity.ts';
import { groupView } from '../views.ts';
import type { Meeting } from './meeting.entity.ts';

/** Who takes part in a meeting: members directly, and the members of its groups. */
export interface Participants {
  teamMembers: TeamMember[];
  groups: Group[];
}

const iso = (date: Date | null | undefined) => (date ? date.toISOString() : null);

function memberShort(member: TeamMember) {
  return { id: member.id, userId: member.user.id, name: member.name, image: member.image ?? null, joinedTeamAt: member.joinedTeamAt.toISOString() };
}

/** Meeting of spec 2.15; `participants` is the spec's text field: the JSON of the participants' ids. */
export function meetingView(meeting: Meeting, participants: Participants) {
  return {
    id: meeting.id,
    teamId: meeting.team.id,
    title: meeting.title,
    dateTime: meeting.dateTime.toISOString(),
    participants: JSON.stringify({ teamMemberIds: participants.teamMembers.map((member) => member.id), groupIds: participants.groups.map((group) => group.id) }),
    agenda: meeting.agenda ?? null,
    meetingPoint: meeting.meetingPoint ?? null,
    protocol: meeting.protocol ?? null,
    state: meeting.state,
    startedAt: iso(meeting.startedAt),
    endedAt: iso(meeting.endedAt),
    cancelledAt: iso(meeting.cancelledAt),
    creatorTeamMemberId: meeting.creatorTeamMember?.id ?? null,
    createdAt: meeting.createdAt.toISOString(),
    updatedAt: meeting.updatedAt.toISOString(),
  };
}

/** The additional info of spec 2.15: the meeting with its participating members and groups. */
export function meetingInfoView(meeting: Meeting, participants: Participants) {
  return { ...meetingView(meeting, participants), teamMembers: participants.teamMembers.map(memberShort), groups: participants.groups.map(groupView) };
}

/** The minimal meeting of the dashboard (spec 2.13). */
export interface MinimalMeeting {
  id: string;
  title: string;
  dateTime: string;
  state: string;
  meetingPoint: string | null;
}
