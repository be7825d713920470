import type { MikroORM } from '@mikro-orm/postgresql';
import type { DiscordMember } from '../../auth/oauth/provider.ts';
import { notFound } from '../../errors/errors.ts';
import { isUuid } from '../validation.ts';

/** Spec 2.8's Discord member status. */
export interface DiscordMemberStatus {
  hasDiscordConnection: boolean;
  userId: string | null;
  member: DiscordMember | null;
}

interface StatusRow {
  user_id: string;
  discord_account: string | null;
  guild_id: string | null;
  member: DiscordMember | null;
}

/**
 * A team member's Discord status (spec 2.8), from what the service already holds: the member's
 * linked Discord account, and the guild membership its last Discord sign-in read (for the guild
 * configured now; one read for another guild, or none, is unknown: member null). Never asks Discord.
 */
export class DiscordStatusService {
  private readonly orm: MikroORM;
  private readonly guildId: string | null;

  constructor(options: { orm: MikroORM; guildId: string | null }) {
    this.orm = options.orm;
    this.guildId = options.guildId;
  }

  async get(teamId: string, memberId: string): Promise<DiscordMemberStatus> {
    const rows = isUuid(memberId)
      ? await this.orm.em.fork().execute<StatusRow[]>(
        `select tm.user_id, a.id as discord_account, d.guild_id, d.member
           from team_member tm
           left join account a on a.user_id = tm.user_id and a.provider_id = 'discord'
           left join discord_member d on d.account_id = a.id
          where tm.id = ? and tm.team_id = ?`,
        [memberId, teamId],
      )
      : [];
    const row = rows[0];
    if (!row) throw notFound('team member', memberId);
    const known = row.discord_account !== null && row.guild_id !== null && row.guild_id === this.guildId;
    return { hasDiscordConnection: row.discord_account !== null, userId: row.user_id, member: known ? row.member : null };
  }
}
