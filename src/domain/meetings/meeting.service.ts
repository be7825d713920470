import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { notFound, teamLimit } from '../../errors/errors.ts';
import type { Actor } from '../actor.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import type { Paging } from '../paging.ts';
import { effectiveLimits } from '../teams/team-limits.ts';
import { Team } from '../teams/team.entity.ts';
import { isUuid, parseInput, uuid } from '../validation.ts';
import { readableMeeting, teamArchiveCutoff } from './meeting-archive.ts';
import { participantsOf, setParticipants } from './meeting-participants.ts';
import { MEETING_STATES, MEETING_TRANSITIONS, requireEditable, transitionRefused, type MeetingField, type MeetingTransition } from './meeting-states.ts';
import { meetingInfoView, meetingView } from './meeting-views.ts';
import { Meeting } from './meeting.entity.ts';

export const createMeetingSchema = z.strictObject({
  title: z.string().trim().min(1).max(200),
  dateTime: z.iso.datetime({ offset: true }),
  agenda: z.string().max(20_000).nullable().optional(),
  meetingPoint: z.string().trim().max(200).nullable().optional().meta({ description: 'Where the meeting takes place: a channel, a room, a link.' }),
  protocol: z.string().max(100_000).nullable().optional(),
  teamMemberIds: z.array(uuid).max(200).optional().meta({ description: 'Current members of the team who take part; replaces the list.' }),
  groupIds: z.array(uuid).max(50).optional().meta({ description: 'Groups of the team whose members take part; replaces the list.' }),
});
export const updateMeetingSchema = createMeetingSchema.partial();

export const meetingFilterSchema = z.strictObject({ state: z.enum(MEETING_STATES).optional() });

export function parseMeetingFilters(query: URLSearchParams) {
  return parseInput(meetingFilterSchema, Object.fromEntries([...query.entries()].filter(([key]) => key !== 'pageNumber' && key !== 'pageSize')));
}

/**
 * Meetings of a team (spec 2.15): create (at most maxPlannedMeetings PLANNED ones: 402), read,
 * change as the state allows, delete, and the transitions of meeting-states.ts, each one
 * conditional UPDATE so that racing transitions, on any instance, are decided once. Closed
 * meetings beyond meetingArchive are not found (meeting-archive.ts).
 */
export class MeetingService {
  private readonly orm: MikroORM;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  /** `{data, count}` of Meeting, newest dateTime first. */
  async list(teamId: string, filters: { state?: (typeof MEETING_STATES)[number] }, paging: Paging) {
    const em = this.orm.em.fork();
    const where = { team: teamId, ...readableMeeting(await teamArchiveCutoff(em, teamId)), ...(filters.state && { state: filters.state }) };
    const [meetings, count] = await em.findAndCount(Meeting, where, {
      orderBy: [{ dateTime: 'desc' }, { id: 'asc' }], limit: paging.pageSize, offset: (paging.pageNumber - 1) * paging.pageSize,
    });
    const participants = await participantsOf(em, meetings);
    return { data: meetings.map((meeting) => meetingView(meeting, participants.get(meeting.id)!)), count };
  }

  async get(teamId: string, meetingId: string) {
    const em = this.orm.em.fork();
    return this.info(em, await this.meeting(em, teamId, meetingId));
  }

  async create(teamId: string, input: unknown, actor: Actor) {
    const body = parseInput(createMeetingSchema, input);
    return this.orm.em.fork().transactional(async (em) => {
      // The team row serialises the creations of one team on every instance, so the count below is exact.
      const rows = await em.execute('select id from team where id = ? for no key update', [teamId]);
      if (rows.length === 0) throw notFound('team', teamId);
      const team = await em.findOneOrFail(Team, { id: teamId }, { populate: ['plan'] });
      const limit = effectiveLimits(team.plan?.limits, team.limitOverrides).maxPlannedMeetings;
      if (limit !== null && (await em.count(Meeting, { team, state: 'PLANNED' })) >= limit) {
        throw teamLimit('maxPlannedMeetings', `The team has reached the limit of ${limit} planned meetings`, limit);
      }
      const meeting = em.create(Meeting, {
        team, title: body.title, dateTime: new Date(body.dateTime), agenda: body.agenda ?? null, meetingPoint: body.meetingPoint ?? null,
        protocol: body.protocol ?? null, state: 'PLANNED', creatorTeamMember: actor.teamMemberId ? em.getReference(TeamMember, actor.teamMemberId) : null,
      });
      await setParticipants(em, meeting, teamId, body.teamMemberIds, body.groupIds);
      await em.flush();
      return this.info(em, meeting);
    });
  }

  /** Changes what the meeting's state allows (meeting-states.ts; 409 otherwise), under the row's lock so a transition cannot slip in between. */
  async update(teamId: string, meetingId: string, input: unknown) {
    const body = parseInput(updateMeetingSchema, input);
    return this.orm.em.fork().transactional(async (em) => {
      const meeting = await this.meeting(em, teamId, meetingId, true);
      const fields = Object.keys(body).map((key): MeetingField => (key === 'teamMemberIds' || key === 'groupIds' ? 'participants' : (key as MeetingField)));
      requireEditable(meeting.state as (typeof MEETING_STATES)[number], fields);
      if (body.title !== undefined) meeting.title = body.title;
      if (body.dateTime !== undefined) meeting.dateTime = new Date(body.dateTime);
      if (body.agenda !== undefined) meeting.agenda = body.agenda;
      if (body.meetingPoint !== undefined) meeting.meetingPoint = body.meetingPoint;
      if (body.protocol !== undefined) meeting.protocol = body.protocol;
      await setParticipants(em, meeting, teamId, body.teamMemberIds, body.groupIds);
      if (fields.length > 0) meeting.updatedAt = new Date();
      await em.flush();
      return this.info(em, meeting);
    });
  }

  async delete(teamId: string, meetingId: string): Promise<void> {
    await this.orm.em.fork().transactional(async (em) => {
      em.remove(await this.meeting(em, teamId, meetingId, true));
      await em.flush();
    });
  }

  /**
   * One transition: a single `UPDATE meeting SET state = <to> WHERE id = ? AND state = <from>`.
   * Of two racing calls (on one instance or two) the second finds the state changed and gets 409.
   */
  async transition(teamId: string, meetingId: string, transition: MeetingTransition) {
    const em = this.orm.em.fork();
    const { from, to, stamp } = MEETING_TRANSITIONS[transition];
    const now = new Date();
    const readable = readableMeeting(await teamArchiveCutoff(em, teamId));
    const changed = isUuid(meetingId)
      ? await em.nativeUpdate(Meeting, { id: meetingId, team: teamId, state: from, ...readable }, { state: to, updatedAt: now, ...(stamp && { [stamp]: now }) })
      : 0;
    if (changed === 0) throw transitionRefused(transition, (await this.meeting(em, teamId, meetingId)).state);
    // Read back without the archive condition: with meetingArchive 0 a meeting closed just now is already beyond it.
    return this.info(em, await em.findOneOrFail(Meeting, { id: meetingId, team: teamId }));
  }

  private async info(em: EntityManager, meeting: Meeting) {
    return meetingInfoView(meeting, (await participantsOf(em, [meeting])).get(meeting.id)!);
  }

  /** The team's meeting, if readable under meetingArchive (404 otherwise); `lock` takes its row FOR UPDATE. */
  private async meeting(em: EntityManager, teamId: string, meetingId: string, lock = false): Promise<Meeting> {
    const readable = readableMeeting(await teamArchiveCutoff(em, teamId));
    const meeting = isUuid(meetingId)
      ? await em.findOne(Meeting, { id: meetingId, team: teamId, ...readable }, lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {})
      : null;
    if (!meeting) throw notFound('meeting', meetingId);
    return meeting;
  }
}
