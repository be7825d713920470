import { Migration } from '@mikro-orm/migrations';

/** Meetings with their participants, and logoffs (spec 2.15; docs/workspace.md "Meetings and logoffs"). */
export class Migration20261130010000Meetings extends Migration {
  override up(): void {
    this.addSql(`create table "meeting" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "team_id" uuid not null, "title" varchar(200) not null, "date_time" timestamptz not null, "agenda" text null, "meeting_point" varchar(200) null, "protocol" text null, "state" varchar(16) not null default 'PLANNED', "started_at" timestamptz null, "ended_at" timestamptz null, "cancelled_at" timestamptz null, "creator_team_member_id" uuid null, primary key ("id"));`);
    this.addSql(`alter table "meeting" add constraint "meeting_title_check" check (length(title) >= 1);`);
    this.addSql(`alter table "meeting" add constraint "meeting_state_check" check (state in ('PLANNED', 'RUNNING', 'FINISHED', 'LOCKED', 'CANCELLED'));`);
    this.addSql(`create index "meeting_team_state_idx" on "meeting" ("team_id", "state");`);
    this.addSql(`create index "meeting_team_date_time_idx" on "meeting" ("team_id", "date_time");`);
    this.addSql(`alter table "meeting" add constraint "meeting_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`alter table "meeting" add constraint "meeting_creator_team_member_id_foreign" foreign key ("creator_team_member_id") references "team_member" ("id") on delete set null;`);

    this.addSql(`create table "meeting_member" ("meeting_id" uuid not null, "team_member_id" uuid not null, primary key ("meeting_id", "team_member_id"));`);
    this.addSql(`create index "meeting_member_team_member_id_index" on "meeting_member" ("team_member_id");`);
    this.addSql(`alter table "meeting_member" add constraint "meeting_member_meeting_id_foreign" foreign key ("meeting_id") references "meeting" ("id") on delete cascade;`);
    this.addSql(`alter table "meeting_member" add constraint "meeting_member_team_member_id_foreign" foreign key ("team_member_id") references "team_member" ("id") on delete cascade;`);

    this.addSql(`create table "meeting_group" ("meeting_id" uuid not null, "group_id" uuid not null, primary key ("meeting_id", "group_id"));`);
    this.addSql(`create index "meeting_group_group_id_index" on "meeting_group" ("group_id");`);
    this.addSql(`alter table "meeting_group" add constraint "meeting_group_meeting_id_foreign" foreign key ("meeting_id") references "meeting" ("id") on delete cascade;`);
    this.addSql(`alter table "meeting_group" add constraint "meeting_group_group_id_foreign" foreign key ("group_id") references "team_group" ("id") on delete cascade;`);

    this.addSql(`create table "logoff" ("id" uuid not null, "team_id" uuid not null, "team_member_id" uuid not null, "meeting_id" uuid null, "message" text not null, "begin_at" timestamptz null, "end_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "logoff" add constraint "logoff_message_check" check (length(message) >= 1);`);
    this.addSql(`create index "logoff_team_id_index" on "logoff" ("team_id");`);
    this.addSql(`create index "logoff_meeting_id_index" on "logoff" ("meeting_id");`);
    this.addSql(`create index "logoff_team_member_begin_idx" on "logoff" ("team_member_id", "begin_at");`);
    this.addSql(`alter table "logoff" add constraint "logoff_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`alter table "logoff" add constraint "logoff_team_member_id_foreign" foreign key ("team_member_id") references "team_member" ("id") on delete cascade;`);
    this.addSql(`alter table "logoff" add constraint "logoff_meeting_id_foreign" foreign key ("meeting_id") references "meeting" ("id") on delete set null;`);
  }

  override down(): void {
    this.addSql(`drop table "logoff";`);
    this.addSql(`drop table "meeting_group";`);
    this.addSql(`drop table "meeting_member";`);
    this.addSql(`drop table "meeting";`);
  }
}
