import type { MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { badRequest } from '../../errors/errors.ts';
import type { Paging } from '../paging.ts';
import { parseInput, uuid } from '../validation.ts';
import { timestampIso } from '../views.ts';

export const LOG_SYSTEMS = ['APP', 'GAMEPANEL'] as const;

/** The filters of the log list, from query parameters; each optional. */
export const teamLogFilterSchema = z.strictObject({
  action: z.string().regex(/^[A-Z][A-Z0-9_]{0,63}$/, 'must be a LogAction such as MEMBER_JOINED').optional(),
  system: z.enum(LOG_SYSTEMS, { message: `must be one of ${LOG_SYSTEMS.join(', ')}` }).optional(),
  teamMemberId: uuid.optional(),
  targetTeamMemberId: uuid.optional(),
  from: z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time' }).optional(),
  to: z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time' }).optional(),
});

export type TeamLogFilters = z.output<typeof teamLogFilterSchema>;

export function parseTeamLogFilters(query: URLSearchParams): TeamLogFilters {
  const raw: Record<string, string> = {};
  for (const [name, value] of query) if (value !== '') raw[name] = value;
  const filters = parseInput(teamLogFilterSchema, raw);
  if (filters.from && filters.to && Date.parse(filters.from) > Date.parse(filters.to)) {
    throw badRequest('Invalid from: must not be after to', 'from');
  }
  return filters;
}

interface LogRow {
  id: string;
  system: string;
  team_id: string;
  team_member_id: string | null;
  action: string;
  data: Record<string, unknown> | null;
  target_team_member_id: string | null;
  target_identifier: string | null;
  created_at: Date | string;
  actor: MemberShort | null;
  target: MemberShort | null;
}

interface MemberShort {
  id: string;
  userId: string;
  name: string;
  image: string | null;
  joinedTeamAt: string;
}

// Member short info of spec 2.13, built in SQL so that one query answers a page.
const memberShort = (alias: string) =>
  `case when ${alias}.id is null then null else json_build_object('id', ${alias}.id, 'userId', ${alias}.user_id, 'name', ${alias}.name, 'image', ${alias}.image, 'joinedTeamAt', ${alias}.joined_team_at) end`;

/**
 * The team log, newest first. Every filter combination is served by one of the
 * (team_id, <filter>, created_at) indexes walked backwards, so a page costs the
 * same at a million rows as at a thousand; docs/team-admin.md shows the plans.
 */
export class TeamLogList {
  private readonly orm: MikroORM;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  async list(teamId: string, filters: TeamLogFilters, paging: Paging) {
    const conditions = ['l.team_id = ?'];
    const params: unknown[] = [teamId];
    const add = (sql: string, value: unknown) => {
      conditions.push(sql);
      params.push(value);
    };
    if (filters.action) add('l.action = ?', filters.action);
    if (filters.system) add('l.system = ?', filters.system);
    if (filters.teamMemberId) add('l.team_member_id = ?', filters.teamMemberId);
    if (filters.targetTeamMemberId) add('l.target_team_member_id = ?', filters.targetTeamMemberId);
    if (filters.from) add('l.created_at >= ?', new Date(filters.from));
    if (filters.to) add('l.created_at <= ?', new Date(filters.to));
    const where = conditions.join(' and ');
    const connection = this.orm.em.getConnection();
    const [rows, counted] = await Promise.all([
      connection.execute<LogRow[]>(
        `select l.id, l.system, l.team_id, l.team_member_id, l.action, l.data, l.target_team_member_id, l.target_identifier, l.created_at,
                ${memberShort('m')} as actor, ${memberShort('tm')} as target
           from team_log l
           left join team_member m on m.id = l.team_member_id
           left join team_member tm on tm.id = l.target_team_member_id
          where ${where}
          order by l.created_at desc, l.id desc
          limit ? offset ?`,
        [...params, paging.pageSize, (paging.pageNumber - 1) * paging.pageSize],
      ),
      connection.execute<{ count: string }[]>(`select count(*) as count from team_log l where ${where}`, params),
    ]);
    return { data: rows.map(logView), count: Number(counted[0]!.count) };
  }
}

function shortView(member: MemberShort | null) {
  return member ? { ...member, joinedTeamAt: timestampIso(member.joinedTeamAt) } : null;
}

function logView(row: LogRow) {
  return {
    id: row.id,
    system: row.system,
    teamId: row.team_id,
    teamMemberId: row.team_member_id,
    action: row.action,
    data: row.data,
    targetTeamMemberId: row.target_team_member_id,
    targetIdentifier: row.target_identifier,
    createdAt: timestampIso(row.created_at),
    teamMember: shortView(row.actor),
    targetTeamMember: shortView(row.target),
  };
}
