import type { MikroORM } from '@mikro-orm/postgresql';
import { timestampIso } from '../views.ts';
import type { MinimalMeeting } from './meeting-views.ts';

/** How many meetings the dashboard lists. */
export const DASHBOARD_MEETINGS = 10;

/**
 * The dashboard's meetings (spec 2.13) for one member: the PLANNED and RUNNING meetings it takes
 * part in (named itself, through one of its groups, or a meeting without participants, which is
 * the whole team's), soonest first.
 */
export class UpcomingMeetings {
  private readonly orm: MikroORM;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  async forMember(teamId: string, memberId: string): Promise<MinimalMeeting[]> {
    const rows = await this.orm.em.fork().execute<{ id: string; title: string; date_time: Date | string; state: string; meeting_point: string | null }[]>(
      `select m.id, m.title, m.date_time, m.state, m.meeting_point
         from meeting m
        where m.team_id = ? and m.state in ('PLANNED', 'RUNNING')
          and (exists (select 1 from meeting_member mm where mm.meeting_id = m.id and mm.team_member_id = ?)
               or exists (select 1 from meeting_group mg join team_member_group tmg on tmg.group_id = mg.group_id
                           where mg.meeting_id = m.id and tmg.member_id = ?)
               or (not exists (select 1 from meeting_member mm where mm.meeting_id = m.id)
                   and not exists (select 1 from meeting_group mg where mg.meeting_id = m.id)))
        order by m.date_time, m.id
        limit ?`,
      [teamId, memberId, memberId, DASHBOARD_MEETINGS],
    );
    return rows.map((row) => ({ id: row.id, title: row.title, dateTime: timestampIso(row.date_time), state: row.state, meetingPoint: row.meeting_point }));
  }
}
