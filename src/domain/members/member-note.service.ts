import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { notFound, teamLimit } from '../../errors/errors.ts';
import type { Actor } from '../actor.ts';
import { LogAction, recordTeamLog } from '../team-logs/team-log.service.ts';
import { effectiveLimits } from '../teams/team-limits.ts';
import { Team } from '../teams/team.entity.ts';
import { isUuid, parseInput } from '../validation.ts';
import { TeamMemberNote } from './member-note.entity.ts';
import { TeamMember } from './team-member.entity.ts';

export const createNoteSchema = z.strictObject({ note: z.string().trim().min(1).max(2000) });

function shortMember(member: TeamMember | null | undefined) {
  return member ? { id: member.id, userId: member.user.id, name: member.name, image: member.image ?? null, joinedTeamAt: member.joinedTeamAt.toISOString() } : null;
}

function noteView(note: TeamMemberNote) {
  return {
    id: note.id,
    teamId: note.team.id,
    teamMemberId: note.teamMember.id,
    note: note.note,
    creatorTeamMemberId: note.creatorTeamMember?.id ?? null,
    createdAt: note.createdAt.toISOString(),
    creatorTeamMember: shortMember(note.creatorTeamMember),
  };
}

/** Notes about a member (spec 2.13), at most maxMemberNotes per member. */
export class MemberNoteService {
  private readonly orm: MikroORM;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  /** TeamMemberNoteInfo of the member, newest first. */
  async list(teamId: string, memberId: string) {
    const em = this.orm.em.fork();
    const member = await this.member(em, teamId, memberId);
    const notes = await em.find(TeamMemberNote, { teamMember: member }, { populate: ['creatorTeamMember'], orderBy: [{ createdAt: 'desc' }, { id: 'asc' }] });
    return notes.map(noteView);
  }

  async create(teamId: string, memberId: string, input: unknown, actor: Actor) {
    const { note } = parseInput(createNoteSchema, input);
    return this.orm.em.fork().transactional(async (em) => {
      // The member row lock serialises concurrent notes on one member, so the limit holds.
      const member = await this.member(em, teamId, memberId, true);
      const team = await em.findOneOrFail(Team, { id: teamId }, { populate: ['plan'] });
      const limit = effectiveLimits(team.plan?.limits, team.limitOverrides).maxMemberNotes;
      if (limit !== null && (await em.count(TeamMemberNote, { teamMember: member })) >= limit) {
        throw teamLimit('maxMemberNotes', `The member has reached the limit of ${limit} notes`, limit);
      }
      const creator = actor.teamMemberId ? await em.findOne(TeamMember, { id: actor.teamMemberId }) : null;
      const created = em.create(TeamMemberNote, { team, teamMember: member, note, creatorTeamMember: creator });
      recordTeamLog(em, { teamId, action: LogAction.memberNoteCreated, teamMemberId: actor.teamMemberId, targetTeamMemberId: member.id, targetIdentifier: created.id });
      await em.flush();
      if (creator) await em.populate(creator, ['user']);
      return noteView(created);
    });
  }

  async delete(teamId: string, memberId: string, noteId: string, actor: Actor): Promise<void> {
    await this.orm.em.fork().transactional(async (em) => {
      const member = await this.member(em, teamId, memberId);
      const note = isUuid(noteId) ? await em.findOne(TeamMemberNote, { id: noteId, teamMember: member }) : null;
      if (!note) throw notFound('note', noteId);
      recordTeamLog(em, { teamId, action: LogAction.memberNoteDeleted, teamMemberId: actor.teamMemberId, targetTeamMemberId: member.id, targetIdentifier: note.id });
      em.remove(note);
      await em.flush();
    });
  }

  private async member(em: EntityManager, teamId: string, memberId: string, lock = false): Promise<TeamMember> {
    const member = isUuid(memberId) ? await em.findOne(TeamMember, { id: memberId, team: teamId }, lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {}) : null;
    if (!member) throw notFound('team member', memberId);
    return member;
  }
}
