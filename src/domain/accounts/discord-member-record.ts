import type { EntityManager } from '@mikro-orm/postgresql';
import type { DiscordMember } from '../../auth/oauth/provider.ts';

/**
 * Keeps what a Discord sign-in read of the user's guild membership (spec 2.8's member) with the
 * Discord account it was read for, replacing what an earlier sign-in read. Written in the sign-in's
 * transaction, after its account row is flushed.
 */
export async function recordDiscordMember(em: EntityManager, discordAccountId: string, read: { guildId: string; member: DiscordMember }): Promise<void> {
  await em.execute(
    `insert into discord_member (account_id, guild_id, member, fetched_at)
     select id, ?, ?, now() from account where provider_id = 'discord' and account_id = ?
     on conflict (account_id) do update set guild_id = excluded.guild_id, member = excluded.member, fetched_at = excluded.fetched_at`,
    [read.guildId, JSON.stringify(read.member), discordAccountId],
  );
}
