import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../../errors/errors.ts';
import { Group } from '../groups/group.entity.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import { Meeting, MeetingGroup, MeetingMember } from './meeting.entity.ts';
import type { Participants } from './meeting-views.ts';

/** The participants of each meeting, in two queries for any number of meetings. */
export async function participantsOf(em: EntityManager, meetings: Meeting[]): Promise<Map<string, Participants>> {
  const byMeeting = new Map<string, Participants>(meetings.map((meeting) => [meeting.id, { teamMembers: [], groups: [] }]));
  if (meetings.length === 0) return byMeeting;
  const [members, groups] = await Promise.all([
    em.find(MeetingMember, { meeting: { $in: meetings } }, { populate: ['teamMember'], orderBy: [{ teamMember: { name: 'asc', id: 'asc' } }] }),
    em.find(MeetingGroup, { meeting: { $in: meetings } }, { populate: ['group'], orderBy: [{ group: { sort: 'asc', name: 'asc', id: 'asc' } }] }),
  ]);
  for (const row of members) byMeeting.get(row.meeting.id)!.teamMembers.push(row.teamMember);
  for (const row of groups) byMeeting.get(row.meeting.id)!.groups.push(row.group);
  return byMeeting;
}

/**
 * Replaces a meeting's participating members (when `memberIds` is given) and groups (when
 * `groupIds` is): each must be of the meeting's team, members current ones (404 otherwise).
 */
export async function setParticipants(
  em: EntityManager, meeting: Meeting, teamId: string, memberIds: string[] | undefined, groupIds: string[] | undefined,
): Promise<void> {
  if (memberIds !== undefined) {
    const ids = [...new Set(memberIds.map((id) => id.toLowerCase()))];
    const members = ids.length ? await em.find(TeamMember, { id: { $in: ids }, team: teamId, leftTeamAt: null }) : [];
    const missing = ids.find((id) => !members.some((member) => member.id === id));
    if (missing) throw notFound('team member', missing);
    await em.nativeDelete(MeetingMember, { meeting });
    for (const member of members) em.create(MeetingMember, { meeting, teamMember: member });
  }
  if (groupIds !== undefined) {
    const ids = [...new Set(groupIds.map((id) => id.toLowerCase()))];
    const groups = ids.length ? await em.find(Group, { id: { $in: ids }, team: teamId }) : [];
    const missing = ids.find((id) => !groups.some((group) => group.id === id));
    if (missing) throw notFound('group', missing);
    await em.nativeDelete(MeetingGroup, { meeting });
    for (const group of groups) em.create(MeetingGroup, { meeting, group });
  }
}
