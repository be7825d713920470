import { Migration } from '@mikro-orm/migrations';

/** Penalty points, the worry box, team tags (with their to-dos) and accesses with their assignments (docs/workspace.md). */
export class Migration20261130020000WorkspacePeople extends Migration {
  override up(): void {
    this.addSql(`create table "penalty_point" ("id" uuid not null, "team_id" uuid not null, "team_member_id" uuid not null, "committer_id" uuid null,
      "points" int not null, "message" text not null, "created_at" timestamptz not null, "expires_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "penalty_point" add constraint "penalty_point_points_check" check (points >= 1);`);
    this.addSql(`alter table "penalty_point" add constraint "penalty_point_message_check" check (length(message) >= 1);`);
    this.addSql(`create index "penalty_point_team_created_idx" on "penalty_point" ("team_id", "created_at");`);
    this.addSql(`create index "penalty_point_member_expires_idx" on "penalty_point" ("team_member_id", "expires_at");`);
    this.addSql(`alter table "penalty_point" add constraint "penalty_point_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`alter table "penalty_point" add constraint "penalty_point_team_member_id_foreign" foreign key ("team_member_id") references "team_member" ("id") on delete cascade;`);
    this.addSql(`alter table "penalty_point" add constraint "penalty_point_committer_id_foreign" foreign key ("committer_id") references "team_member" ("id") on delete set null;`);

    this.addSql(`create table "worry_box_entry" ("id" uuid not null, "team_id" uuid not null, "team_member_id" uuid null, "author_tag" varchar(64) null,
      "is_anonymous" boolean not null, "message" text not null, "for_group_id" uuid not null, "created_at" timestamptz not null,
      "answered_at" timestamptz null, "answer" text null, "handled_by_team_member_id" uuid null, primary key ("id"));`);
    this.addSql(`alter table "worry_box_entry" add constraint "worry_box_entry_message_check" check (length(message) >= 1);`);
    // An anonymous entry has no member, only the author tag; a named one has its member and no tag.
    this.addSql(`alter table "worry_box_entry" add constraint "worry_box_entry_author_check"
      check ((is_anonymous and team_member_id is null and author_tag is not null) or (not is_anonymous and team_member_id is not null and author_tag is null));`);
    this.addSql(`create index "worry_box_entry_group_created_idx" on "worry_box_entry" ("team_id", "for_group_id", "created_at");`);
    this.addSql(`create index "worry_box_entry_author_tag_idx" on "worry_box_entry" ("team_id", "author_tag");`);
    this.addSql(`create index "worry_box_entry_member_idx" on "worry_box_entry" ("team_member_id");`);
    this.addSql(`alter table "worry_box_entry" add constraint "worry_box_entry_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`alter table "worry_box_entry" add constraint "worry_box_entry_team_member_id_foreign" foreign key ("team_member_id") references "team_member" ("id") on delete cascade;`);
    this.addSql(`alter table "worry_box_entry" add constraint "worry_box_entry_for_group_id_foreign" foreign key ("for_group_id") references "team_group" ("id") on delete cascade;`);
    this.addSql(`alter table "worry_box_entry" add constraint "worry_box_entry_handled_by_team_member_id_foreign" foreign key ("handled_by_team_member_id") references "team_member" ("id") on delete set null;`);

    this.addSql(`create table "team_tag" ("id" uuid not null, "team_id" uuid not null, "name" varchar(64) not null, "slug" varchar(64) not null,
      "color" varchar(7) null, "icon" varchar(64) null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "team_tag" add constraint "team_tag_name_check" check (length(name) >= 1);`);
    this.addSql(`alter table "team_tag" add constraint "team_tag_slug_check" check (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$');`);
    this.addSql(`alter table "team_tag" add constraint "team_tag_team_slug_unique" unique ("team_id", "slug");`);
    this.addSql(`alter table "team_tag" add constraint "team_tag_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`create table "team_tag_todo" ("tag_id" uuid not null, "todo_id" uuid not null, "created_at" timestamptz not null, primary key ("tag_id", "todo_id"));`);
    this.addSql(`create index "team_tag_todo_todo_id_index" on "team_tag_todo" ("todo_id");`);
    this.addSql(`alter table "team_tag_todo" add constraint "team_tag_todo_tag_id_foreign" foreign key ("tag_id") references "team_tag" ("id") on delete cascade;`);
    this.addSql(`alter table "team_tag_todo" add constraint "team_tag_todo_todo_id_foreign" foreign key ("todo_id") references "todo" ("id") on delete cascade;`);

    this.addSql(`create table "team_access" ("id" uuid not null, "team_id" uuid not null, "name" varchar(100) not null, "description" text null,
      "icon" varchar(64) null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "team_access" add constraint "team_access_name_check" check (length(name) >= 1);`);
    this.addSql(`create index "team_access_team_id_index" on "team_access" ("team_id");`);
    this.addSql(`alter table "team_access" add constraint "team_access_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    for (const [table, target, targetTable] of [['team_access_assignment', 'team_member', 'team_member'], ['team_access_group_assignment', 'group', 'team_group']] as const) {
      this.addSql(`create table "${table}" ("id" uuid not null, "team_id" uuid not null, "access_id" uuid not null, "${target}_id" uuid not null,
        "note" text null, "assigned_at" timestamptz not null, "expires_at" timestamptz null, "assigned_by_id" uuid null, primary key ("id"));`);
      this.addSql(`alter table "${table}" add constraint "${table}_access_${target === 'group' ? 'group' : 'member'}_unique" unique ("access_id", "${target}_id");`);
      this.addSql(`create index "${table}_team_id_index" on "${table}" ("team_id");`);
      this.addSql(`create index "${table}_${target}_id_index" on "${table}" ("${target}_id");`);
      this.addSql(`alter table "${table}" add constraint "${table}_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
      this.addSql(`alter table "${table}" add constraint "${table}_access_id_foreign" foreign key ("access_id") references "team_access" ("id") on delete cascade;`);
      this.addSql(`alter table "${table}" add constraint "${table}_${target}_id_foreign" foreign key ("${target}_id") references "${targetTable}" ("id") on delete cascade;`);
      this.addSql(`alter table "${table}" add constraint "${table}_assigned_by_id_foreign" foreign key ("assigned_by_id") references "team_member" ("id") on delete set null;`);
    }
  }

  override down(): void {
    for (const table of ['team_access_group_assignment', 'team_access_assignment', 'team_access', 'team_tag_todo', 'team_tag', 'worry_box_entry', 'penalty_point']) {
      this.addSql(`drop table if exists "${table}";`);
    }
  }
}
