import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { badRequest, conflict, forbidden, notFound } from '../../errors/errors.ts';
import type { Actor } from '../actor.ts';
import { readableMeeting, teamArchiveCutoff } from '../meetings/meeting-archive.ts';
import { OPEN_MEETING_STATES, type MeetingState } from '../meetings/meeting-states.ts';
import { Meeting } from '../meetings/meeting.entity.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import type { Paging } from '../paging.ts';
import { LogAction, recordTeamLog } from '../team-logs/team-log.service.ts';
import { isUuid, parseInput, uuid } from '../validation.ts';
import { Logoff } from './logoff.entity.ts';

const instant = z.iso.datetime({ offset: true });

export const createLogoffSchema = z.strictObject({
  message: z.string().trim().min(1).max(2000),
  begin: instant.nullable().optional().meta({ description: 'Start of the absence; given together with end.' }),
  end: instant.nullable().optional().meta({ description: 'End of the absence (inclusive), not in the past; given together with begin.' }),
  meetingId: uuid.nullable().optional().meta({ description: 'A PLANNED or RUNNING meeting of the team the member will miss.' }),
});

export const logoffFilterSchema = z.strictObject({ teamMemberId: uuid.optional(), meetingId: uuid.optional() });

export function parseLogoffFilters(query: URLSearchParams) {
  return parseInput(logoffFilterSchema, Object.fromEntries([...query.entries()].filter(([key]) => key !== 'pageNumber' && key !== 'pageSize')));
}

/** Who asks: the member acting, and whether it holds team.logoffs.manage (sees and deletes every member's). */
export interface LogoffCaller extends Actor {
  managesAll: boolean;
}

function logoffView(logoff: Logoff) {
  const member = logoff.teamMember;
  return {
    id: logoff.id,
    teamId: logoff.team.id,
    teamMemberId: member.id,
    message: logoff.message,
    meetingId: logoff.meeting?.id ?? null,
    begin: logoff.begin?.toISOString() ?? null,
    end: logoff.end?.toISOString() ?? null,
    createdAt: logoff.createdAt.toISOString(),
    teamMember: { id: member.id, userId: member.user.id, name: member.name, image: member.image ?? null, joinedTeamAt: member.joinedTeamAt.toISOString() },
  };
}

/**
 * Logoffs (spec 2.15): a member's announced absence over a range, from one meeting, or both. A
 * member files, sees and deletes its own; team.logoffs.manage sees and deletes everyone's. One
 * member's ranges never overlap and a member logs off from a meeting once (409); a range that
 * has already ended is refused (400). Logged as LOGOFF_CREATED and LOGOFF_DELETED.
 */
export class LogoffService {
  private readonly orm: MikroORM;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  /** `{data, count}`, newest first: everyone's for a manager, the caller's own otherwise. */
  async list(teamId: string, caller: LogoffCaller, filters: { teamMemberId?: string; meetingId?: string }, paging: Paging) {
    const filteredMember = filters.teamMemberId?.toLowerCase();
    const foreignFilter = filteredMember !== undefined && filteredMember !== caller.teamMemberId;
    if (!caller.managesAll && (!caller.teamMemberId || foreignFilter)) return { data: [], count: 0 };
    const memberId = caller.managesAll ? filteredMember : caller.teamMemberId;
    const where = { team: teamId, ...(memberId && { teamMember: memberId }), ...(filters.meetingId && { meeting: filters.meetingId }) };
    const em = this.orm.em.fork();
    const [logoffs, count] = await em.findAndCount(Logoff, where, {
      populate: ['teamMember'], orderBy: [{ createdAt: 'desc' }, { id: 'asc' }], limit: paging.pageSize, offset: (paging.pageNumber - 1) * paging.pageSize,
    });
    return { data: logoffs.map(logoffView), count };
  }

  async get(teamId: string, logoffId: string, caller: LogoffCaller) {
    return logoffView(await this.logoff(this.orm.em.fork(), teamId, logoffId, caller));
  }

  async create(teamId: string, input: unknown, caller: LogoffCaller) {
    const body = parseInput(createLogoffSchema, input);
    const begin = body.begin ? new Date(body.begin) : null;
    const end = body.end ? new Date(body.end) : null;
    if ((begin === null) !== (end === null)) throw badRequest('begin and end go together: give both or neither.', begin ? 'end' : 'begin');
    if (begin === null && !body.meetingId) throw badRequest('A logoff needs a range (begin and end), a meetingId, or both.', 'begin');
    if (begin && end && begin > end) throw badRequest('begin must not be after end.', 'begin');
    if (end && end < new Date()) throw badRequest('The range has already ended: end must not be in the past.', 'end');
    if (!caller.teamMemberId) throw forbidden('Only a member of the team files a logoff');
    const memberId = caller.teamMemberId;
    return this.orm.em.fork().transactional(async (em) => {
      // The member's row serialises its logoffs on every instance, so the overlap check below is exact.
      const member = await em.findOne(TeamMember, { id: memberId, team: teamId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if (!member) throw notFound('team member', memberId);
      const meeting = body.meetingId ? await this.openMeeting(em, teamId, body.meetingId) : null;
      if (meeting && (await em.count(Logoff, { teamMember: member, meeting }))) throw conflict('The member has already logged off from this meeting', meeting.id);
      if (begin && end) {
        const overlapping = await em.findOne(Logoff, { teamMember: member, begin: { $ne: null, $lte: end }, end: { $ne: null, $gte: begin } });
        if (overlapping) throw conflict('The range overlaps another logoff of the member', overlapping.id);
      }
      const logoff = em.create(Logoff, { team: teamId, teamMember: member, meeting, message: body.message, begin, end });
      recordTeamLog(em, {
        teamId, action: LogAction.logoffCreated, teamMemberId: memberId, targetTeamMemberId: memberId, targetIdentifier: logoff.id,
        data: { meetingId: meeting?.id ?? null, begin: begin?.toISOString() ?? null, end: end?.toISOString() ?? null },
      });
      await em.flush();
      return logoffView(logoff);
    });
  }

  async delete(teamId: string, logoffId: string, caller: LogoffCaller): Promise<void> {
    await this.orm.em.fork().transactional(async (em) => {
      const logoff = await this.logoff(em, teamId, logoffId, caller);
      recordTeamLog(em, {
        teamId, action: LogAction.logoffDeleted, teamMemberId: caller.teamMemberId, targetTeamMemberId: logoff.teamMember.id, targetIdentifier: logoff.id,
      });
      em.remove(logoff);
      await em.flush();
    });
  }

  /** A meeting of the team one can still log off from: readable, PLANNED or RUNNING (409 for a closed one). */
  private async openMeeting(em: EntityManager, teamId: string, meetingId: string): Promise<Meeting> {
    const meeting = await em.findOne(Meeting, { id: meetingId.toLowerCase(), team: teamId, ...readableMeeting(await teamArchiveCutoff(em, teamId)) });
    if (!meeting) throw notFound('meeting', meetingId);
    if (!OPEN_MEETING_STATES.includes(meeting.state as MeetingState)) throw conflict(`The meeting is ${meeting.state}: one logs off only from a PLANNED or RUNNING meeting`, meeting.state);
    return meeting;
  }

  /** The logoff if the caller may see it: a manager any of the team's, anyone else its own (404 otherwise, as if it did not exist). */
  private async logoff(em: EntityManager, teamId: string, logoffId: string, caller: LogoffCaller): Promise<Logoff> {
    const logoff = isUuid(logoffId) ? await em.findOne(Logoff, { id: logoffId, team: teamId }, { populate: ['teamMember'] }) : null;
    if (!logoff || (!caller.managesAll && logoff.teamMember.id !== caller.teamMemberId)) throw notFound('logoff', logoffId);
    return logoff;
  }
}
