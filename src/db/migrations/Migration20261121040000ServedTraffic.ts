import { Migration } from '@mikro-orm/migrations';

/**
 * Responses the service served itself (GET/HEAD /media/team/...), per team and
 * UTC day, for GET /usage. Written by ServedTrafficCounter in batches (one
 * upsert per flush), never once per request.
 */
export class Migration20261121040000ServedTraffic extends Migration {
  override up(): void {
    this.addSql(`create table "media_served_daily" ("team_id" uuid not null, "day" date not null, "requests" bigint not null default '0', "bytes" bigint not null default '0', primary key ("team_id", "day"));`);
    this.addSql(`alter table "media_served_daily" add constraint "media_served_daily_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
  }

  override down(): void {
    this.addSql(`drop table if exists "media_served_daily";`);
  }
}
