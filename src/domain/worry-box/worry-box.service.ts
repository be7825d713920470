import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { Permission } from '../../auth/permissions.ts';
import { conflict, forbidden, notFound } from '../../errors/errors.ts';
import { Group } from '../groups/group.entity.ts';
import type { Caller } from '../members/member-admin.service.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import type { Paging } from '../paging.ts';
import { Team } from '../teams/team.entity.ts';
import { isUuid, parseInput, uuid } from '../validation.ts';
import type { WorryBoxAuthorTags } from './worry-box-author.ts';
import { WorryBoxEntry } from './worry-box-entry.entity.ts';

export const createWorrySchema = z.strictObject({
  forGroupId: uuid.meta({ description: 'The group of the team the entry is for: its members read and answer it.' }),
  message: z.string().trim().min(1).max(4000),
  isAnonymous: z.boolean().optional().meta({ description: 'Default false. An anonymous entry names its author nowhere, to no one.' }),
});

export const answerWorrySchema = z.strictObject({ answer: z.string().trim().min(1).max(4000) });

export const worryFilterSchema = z.strictObject({
  forGroupId: uuid.optional().meta({ description: 'Only the entries for this group.' }),
  answered: z.enum(['true', 'false']).optional().meta({ description: 'Only answered (true) or unanswered (false) entries.' }),
});

export interface WorryFilters {
  forGroupId?: string;
  answered?: boolean;
}

export function parseWorryFilters(query: URLSearchParams): WorryFilters {
  const parsed = parseInput(worryFilterSchema, Object.fromEntries([...query.entries()].filter(([key]) => key !== 'pageNumber' && key !== 'pageSize')));
  return { ...(parsed.forGroupId && { forGroupId: parsed.forGroupId.toLowerCase() }), ...(parsed.answered && { answered: parsed.answered === 'true' }) };
}

/** Who calls a worry box route: the caller as the other services see it, and the person behind it (null for a key linked to no member). */
export interface WorryCaller extends Caller {
  personMemberId: string | null;
}

interface EntryRow {
  id: string;
  team_id: string;
  team_member_id: string | null;
  is_anonymous: boolean;
  message: string;
  created_at: Date;
  for_group_id: string;
  answered_at: Date | null;
  answer: string | null;
  handled_by_team_member_id: string | null;
}

/** The columns an answer is made of: never author_tag. */
const ENTRY_COLUMNS = 'e.id, e.team_id, e.team_member_id, e.is_anonymous, e.message, e.created_at, e.for_group_id, e.answered_at, e.answer, e.handled_by_team_member_id';

function entryView(row: EntryRow) {
  return {
    id: row.id, teamId: row.team_id,
    // The check constraint keeps it null for an anonymous entry; said again here so that no answer can carry it.
    teamMemberId: row.is_anonymous ? null : row.team_member_id,
    isAnonymous: row.is_anonymous, message: row.message, createdAt: new Date(row.created_at).toISOString(), forGroupId: row.for_group_id,
    answeredAt: row.answered_at ? new Date(row.answered_at).toISOString() : null, answer: row.answer, handledByTeamMemberId: row.handled_by_team_member_id,
  };
}

/**
 * The worry box (spec 2.15). Any member writes an entry to a group of the team, named or
 * anonymous; the members of that group (and holders of team.worryBox.manage) read and answer it,
 * once. An anonymous entry stores no member id: only an author tag (worry-box-author.ts) that
 * lets the author list its own entries. No entry is written to the team log.
 */
export class WorryBoxService {
  private readonly orm: MikroORM;
  private readonly authorTags: WorryBoxAuthorTags;

  constructor(options: { orm: MikroORM; authorTags: WorryBoxAuthorTags }) {
    this.orm = options.orm;
    this.authorTags = options.authorTags;
  }

  async create(teamId: string, input: unknown, caller: WorryCaller) {
    const body = parseInput(createWorrySchema, input);
    const author = this.person(caller);
    const em = this.orm.em.fork();
    const group = await em.findOne(Group, { id: body.forGroupId.toLowerCase(), team: teamId });
    if (!group) throw notFound('group', body.forGroupId);
    const anonymous = body.isAnonymous ?? false;
    const entry = em.create(WorryBoxEntry, {
      team: em.getReference(Team, teamId), forGroup: group, message: body.message, isAnonymous: anonymous,
      teamMember: anonymous ? null : em.getReference(TeamMember, author),
      authorTag: anonymous ? this.authorTags.of(teamId, author) : null,
    });
    await em.flush();
    return entryView(await this.row(em, teamId, entry.id) as EntryRow);
  }

  /** Entries of the groups the caller is in (of every group with team.worryBox.manage), newest first. */
  async list(teamId: string, filters: WorryFilters, paging: Paging, caller: WorryCaller) {
    const conditions = ['e.team_id = ?'];
    const params: unknown[] = [teamId];
    if (!caller.permissions.has(Permission.worryBoxManage)) {
      conditions.push('e.for_group_id in (select group_id from team_member_group where member_id = ?)');
      params.push(caller.teamMemberId);
    }
    if (filters.forGroupId) {
      conditions.push('e.for_group_id = ?');
      params.push(filters.forGroupId);
    }
    if (filters.answered !== undefined) conditions.push(filters.answered ? 'e.answered_at is not null' : 'e.answered_at is null');
    return this.page(conditions, params, paging);
  }

  /** The caller's own entries, named and anonymous, newest first. */
  async mine(teamId: string, paging: Paging, caller: WorryCaller) {
    const author = this.person(caller);
    return this.page(['e.team_id = ?', '(e.team_member_id = ? or e.author_tag = ?)'], [teamId, author, this.authorTags.of(teamId, author)], paging);
  }

  /** One entry, for a reader of its group or its author; 404 for anyone else. */
  async get(teamId: string, entryId: string, caller: WorryCaller) {
    const em = this.orm.em.fork();
    const row = await this.row(em, teamId, entryId);
    if (!row || !((await this.mayRead(em, row, caller)) || (await this.isAuthor(em, teamId, row, caller)))) throw notFound('worry box entry', entryId);
    return entryView(row);
  }

  /**
   * Answers an entry once: a conditional update, so that of two answers racing on any instances
   * one lands and the other gets 409. Its author cannot answer it (an anonymous author would
   * otherwise name itself as handledByTeamMemberId).
   */
  async answer(teamId: string, entryId: string, input: unknown, caller: WorryCaller) {
    const { answer } = parseInput(answerWorrySchema, input);
    const em = this.orm.em.fork();
    const row = await this.row(em, teamId, entryId);
    if (!row || !(await this.mayRead(em, row, caller))) throw notFound('worry box entry', entryId);
    if (await this.isAuthor(em, teamId, row, caller)) throw forbidden('The author of an entry cannot answer it');
    const answered = await em.execute<EntryRow[]>(
      `update worry_box_entry e set answered_at = ?, answer = ?, handled_by_team_member_id = ? where e.id = ? and e.answered_at is null returning ${ENTRY_COLUMNS}`,
      [new Date(), answer, caller.teamMemberId, row.id]);
    if (answered.length === 0) throw conflict('The entry has been answered already', 'answeredAt');
    return entryView(answered[0]!);
  }

  async delete(teamId: string, entryId: string): Promise<void> {
    const deleted = isUuid(entryId) ? await this.orm.em.fork().nativeDelete(WorryBoxEntry, { id: entryId.toLowerCase(), team: teamId }) : 0;
    if (deleted === 0) throw notFound('worry box entry', entryId);
  }

  private async page(conditions: string[], params: unknown[], paging: Paging) {
    const em = this.orm.em.fork();
    const where = conditions.join(' and ');
    const [counted] = await em.execute<{ n: string }[]>(`select count(*) as n from worry_box_entry e where ${where}`, params);
    const rows = await em.execute<EntryRow[]>(
      `select ${ENTRY_COLUMNS} from worry_box_entry e where ${where} order by e.created_at desc, e.id limit ? offset ?`,
      [...params, paging.pageSize, (paging.pageNumber - 1) * paging.pageSize]);
    return { totalEntries: Number(counted?.n ?? 0), entries: rows.map(entryView) };
  }

  private async row(em: EntityManager, teamId: string, entryId: string): Promise<EntryRow | null> {
    if (!isUuid(entryId)) return null;
    const [row] = await em.execute<EntryRow[]>(`select ${ENTRY_COLUMNS} from worry_box_entry e where e.id = ? and e.team_id = ?`, [entryId.toLowerCase(), teamId]);
    return row ?? null;
  }

  private async mayRead(em: EntityManager, row: EntryRow, caller: WorryCaller): Promise<boolean> {
    if (caller.permissions.has(Permission.worryBoxManage)) return true;
    if (!caller.teamMemberId) return false;
    const found = await em.execute('select 1 from team_member_group where member_id = ? and group_id = ?', [caller.teamMemberId, row.for_group_id]);
    return found.length > 0;
  }

  private async isAuthor(em: EntityManager, teamId: string, row: EntryRow, caller: WorryCaller): Promise<boolean> {
    if (!caller.personMemberId) return false;
    if (!row.is_anonymous) return row.team_member_id === caller.personMemberId;
    const found = await em.execute('select 1 from worry_box_entry where id = ? and author_tag = ?', [row.id, this.authorTags.of(teamId, caller.personMemberId)]);
    return found.length > 0;
  }

  /** The member writing or reading its own entries: a person (a session, or a key linked to a member), never a key acting as the owner. */
  private person(caller: WorryCaller): string {
    if (!caller.personMemberId) throw forbidden('The worry box needs a member: a key linked to no member writes as no one');
    return caller.personMemberId;
  }
}
