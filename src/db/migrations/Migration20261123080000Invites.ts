import { Migration } from '@mikro-orm/migrations';

/** Team invites (spec 2.13). */
export class Migration20261123080000Invites extends Migration {
  override up(): void {
    this.addSql(`create table "team_invite" ("id" uuid not null, "team_id" uuid not null, "group_id" uuid not null, "is_used" boolean not null default false, "is_multi_use" boolean not null default false, "created_at" timestamptz not null, "expire_date" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "team_invite_team_id_index" on "team_invite" ("team_id");`);
    this.addSql(`create index "team_invite_group_id_index" on "team_invite" ("group_id");`);
    this.addSql(`alter table "team_invite" add constraint "team_invite_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`alter table "team_invite" add constraint "team_invite_group_id_foreign" foreign key ("group_id") references "team_group" ("id") on delete cascade;`);
  }

  override down(): void {
    this.addSql(`drop table "team_invite";`);
  }
}
