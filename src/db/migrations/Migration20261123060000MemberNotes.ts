import { Migration } from '@mikro-orm/migrations';

/** Member notes (spec 2.13), at most maxMemberNotes per member. */
export class Migration20261123060000MemberNotes extends Migration {
  override up(): void {
    this.addSql(`create table "team_member_note" ("id" uuid not null, "team_id" uuid not null, "team_member_id" uuid not null, "note" text not null, "creator_team_member_id" uuid null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "team_member_note" add constraint "team_member_note_note_check" check (length(note) >= 1);`);
    this.addSql(`create index "team_member_note_team_id_index" on "team_member_note" ("team_id");`);
    this.addSql(`create index "team_member_note_member_created_idx" on "team_member_note" ("team_member_id", "created_at");`);
    this.addSql(`alter table "team_member_note" add constraint "team_member_note_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`alter table "team_member_note" add constraint "team_member_note_team_member_id_foreign" foreign key ("team_member_id") references "team_member" ("id") on delete cascade;`);
    this.addSql(`alter table "team_member_note" add constraint "team_member_note_creator_team_member_id_foreign" foreign key ("creator_team_member_id") references "team_member" ("id") on delete set null;`);
  }

  override down(): void {
    this.addSql(`drop table "team_member_note";`);
  }
}
