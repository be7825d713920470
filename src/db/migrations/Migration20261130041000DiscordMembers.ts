import { Migration } from '@mikro-orm/migrations';

/**
 * The Discord member status (spec 2.8) of a linked Discord account: the member object as Discord's
 * guild member answer gave it at the last sign-in that read it, for the guild configured then
 * (`guild_id`; OAUTH_DISCORD_GUILD_ID). Unlinking the account removes it.
 */
export class Migration20261130041000DiscordMembers extends Migration {
  override up(): void {
    this.addSql(`create table "discord_member" (
      "account_id" uuid not null primary key references "account" ("id") on delete cascade,
      "guild_id" varchar(32) not null,
      "member" jsonb not null,
      "fetched_at" timestamptz not null);`);
  }
}
