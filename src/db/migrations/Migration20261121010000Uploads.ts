import { Migration } from '@mikro-orm/migrations';

/** Upload reservations, the media event outbox and daily upload usage. */
export class Migration20261121010000Uploads extends Migration {
  override up(): void {
    this.addSql(`alter table "team" add "reserved_storage" bigint not null default '0';`);
    this.addSql(`alter table "team" add constraint "team_reserved_storage_check" check (reserved_storage >= 0);`);
    this.addSql(`create table "upload_reservation" ("id" uuid not null, "team_id" uuid not null, "bytes" bigint not null, "storage_key" varchar(255) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "upload_reservation_team_id_index" on "upload_reservation" ("team_id");`);
    this.addSql(`create index "upload_reservation_updated_idx" on "upload_reservation" ("updated_at");`);
    this.addSql(`alter table "upload_reservation" add constraint "upload_reservation_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`alter table "upload_reservation" add constraint "upload_reservation_bytes_check" check (bytes >= 0);`);
    this.addSql(`create table "media_event" ("id" uuid not null, "team_id" uuid not null, "kind" varchar(64) not null, "payload" jsonb not null, "occurred_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "media_event_team_created_idx" on "media_event" ("team_id", "occurred_at");`);
    this.addSql(`alter table "media_event" add constraint "media_event_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`create table "media_usage_daily" ("team_id" uuid not null, "day" date not null, "uploads" int not null default 0, "upload_bytes" bigint not null default '0', "api_uploads" int not null default 0, primary key ("team_id", "day"));`);
    this.addSql(`alter table "media_usage_daily" add constraint "media_usage_daily_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
  }
}
