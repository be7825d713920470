import { Migration } from '@mikro-orm/migrations';

/** The workspace tables: plans, teams, users, members, groups, API keys, media folders and files, team logs. */
export class Migration20261121000000Initial extends Migration {
  override up(): void {
    this.addSql(`create table "plan" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "name" varchar(64) not null, "slug" varchar(32) not null, "color" varchar(16) not null default '#808080', "level" int not null default 0, "monthly_price_ids" text[] not null default '{}', "yearly_price_ids" text[] not null default '{}', "monthly_price" int not null default 0, "yearly_price" int not null default 0, "is_public" boolean not null default true, "is_default" boolean not null default false, "position" int not null default 0, "limits" jsonb not null, primary key ("id"));`);
    this.addSql(`alter table "plan" add constraint "plan_slug_unique" unique ("slug");`);
    this.addSql(`create table "team" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "name" varchar(24) not null, "logo" text null, "is_active" boolean not null default true, "price_id" varchar(255) null, "plan_id" uuid null, "archived" boolean not null default false, "setup" boolean not null default false, "timezone" varchar(64) not null default 'UTC', "locale" varchar(16) not null default 'en', "limit_overrides" jsonb not null default '{}', "used_storage" bigint not null default '0', primary key ("id"));`);
    this.addSql(`alter table "team" add constraint "team_name_check" check (length(name) >= 2);`);
    this.addSql(`alter table "team" add constraint "team_used_storage_check" check (used_storage >= 0);`);
    this.addSql(`create table "media_folder" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "team_id" uuid not null, "parent_id" uuid null, "name" varchar(100) not null, "depth" smallint not null default 1, "retention_days" int null, "max_files" int null, "default_public" boolean null, primary key ("id"));`);
    this.addSql(`create index "media_folder_parent_id_index" on "media_folder" ("parent_id");`);
    this.addSql(`alter table "media_folder" add constraint "media_folder_team_id_parent_id_name_unique" unique nulls not distinct ("team_id", "parent_id", "name");`);
    this.addSql(`alter table "media_folder" add constraint "media_folder_name_check" check (length(name) >= 1);`);
    this.addSql(`alter table "media_folder" add constraint "media_folder_depth_check" check (depth between 1 and 5);`);
    this.addSql(`alter table "media_folder" add constraint "media_folder_retention_days_check" check (retention_days is null or retention_days >= 1);`);
    this.addSql(`alter table "media_folder" add constraint "media_folder_max_files_check" check (max_files is null or max_files >= 1);`);
    this.addSql(`create table "team_group" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "team_id" uuid not null, "name" varchar(24) not null, "permissions" text[] not null default '{}', "sort" int not null default 0, "color" varchar(7) not null default '#808080', primary key ("id"));`);
    this.addSql(`create index "team_group_team_id_index" on "team_group" ("team_id");`);
    this.addSql(`alter table "team_group" add constraint "team_group_name_check" check (length(name) >= 2);`);
    this.addSql(`alter table "team_group" add constraint "team_group_color_check" check (color ~ '^#([A-Fa-f0-9]{6}|[A-Fa-f0-9]{3})$');`);
    this.addSql(`create table "user" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "username" varchar(20) not null, "changed_username_at" timestamptz not null, "email" varchar(320) not null, "email_verified" timestamptz null, "is_email_verified" boolean not null default false, "image" text null, "stripe_customer_id" varchar(255) null, "coins" int not null default 0, "last_login_at" timestamptz not null, "disabled" boolean not null default false, "disabled_at" timestamptz null, "welcome_screen" boolean not null default true, "permissions" text[] not null default '{}', "migrated" boolean not null default false, "migrated_id" varchar(255) null, primary key ("id"));`);
    this.addSql(`alter table "user" add constraint "user_username_unique" unique ("username");`);
    this.addSql(`alter table "user" add constraint "user_email_unique" unique ("email");`);
    this.addSql(`alter table "user" add constraint "user_username_check" check (username ~ '^[a-zA-Z0-9_]{3,20}$');`);
    this.addSql(`create table "team_member" ("id" uuid not null, "team_id" uuid not null, "user_id" uuid not null, "name" varchar(20) not null, "image" text null, "personal_note" text not null default '', "main_group_id" uuid null, "permissions" text[] not null default '{}', "sort" int not null default 0, "created_at" timestamptz not null, "is_team_owner" boolean not null default false, "last_selection" timestamptz null, "total_selections" int not null default 0, "joined_team_at" timestamptz not null, "left_team_at" timestamptz null, "archived" boolean not null default false, "admin_expires_at" timestamptz null, "admin_joined_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "team_member_user_id_index" on "team_member" ("user_id");`);
    this.addSql(`alter table "team_member" add constraint "team_member_team_id_user_id_unique" unique ("team_id", "user_id");`);
    this.addSql(`alter table "team_member" add constraint "team_member_team_id_name_unique" unique ("team_id", "name");`);
    this.addSql(`alter table "team_member" add constraint "team_member_name_check" check (name ~ '^[a-zA-Z0-9_]{3,20}$');`);
    this.addSql(`create table "team_member_group" ("member_id" uuid not null, "group_id" uuid not null, "created_at" timestamptz not null, primary key ("member_id", "group_id"));`);
    this.addSql(`create index "team_member_group_group_id_index" on "team_member_group" ("group_id");`);
    this.addSql(`create table "team_log" ("id" uuid not null, "system" varchar(16) not null default 'APP', "team_id" uuid not null, "team_member_id" uuid null, "action" varchar(64) not null, "data" jsonb null, "target_team_member_id" uuid null, "target_identifier" varchar(255) null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "team_log_team_created_idx" on "team_log" ("team_id", "created_at");`);
    this.addSql(`alter table "team_log" add constraint "team_log_system_check" check (system in ('APP', 'GAMEPANEL'));`);
    this.addSql(`create table "api_key" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "team_id" uuid not null, "team_member_id" uuid null, "description" varchar(255) null, "prefix" varchar(32) not null, "secret_hash" varchar(64) not null, "scopes" text[] not null default '{}', "last_used_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "api_key_team_id_index" on "api_key" ("team_id");`);
    this.addSql(`create index "api_key_team_member_id_index" on "api_key" ("team_member_id");`);
    this.addSql(`alter table "api_key" add constraint "api_key_prefix_unique" unique ("prefix");`);
    this.addSql(`create table "media_file" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "team_id" uuid not null, "folder_id" uuid null, "file_name" varchar(255) not null, "storage_key" varchar(255) not null, "size" bigint not null, "content_type" varchar(255) not null, "hash" varchar(32) null, "is_public" boolean not null, "tags" text[] not null default '{}', "uploaded_by_key_id" uuid null, primary key ("id"));`);
    this.addSql(`alter table "media_file" add constraint "media_file_storage_key_unique" unique ("storage_key");`);
    this.addSql(`create index "media_file_team_created_idx" on "media_file" ("team_id", "created_at", "id");`);
    this.addSql(`create index "media_file_team_folder_idx" on "media_file" ("team_id", "folder_id");`);
    this.addSql(`alter table "media_file" add constraint "media_file_size_check" check (size >= 0);`);
    this.addSql(`alter table "team" add constraint "team_plan_id_foreign" foreign key ("plan_id") references "plan" ("id") on delete set null;`);
    this.addSql(`alter table "media_folder" add constraint "media_folder_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`alter table "media_folder" add constraint "media_folder_parent_id_foreign" foreign key ("parent_id") references "media_folder" ("id") on delete cascade;`);
    this.addSql(`alter table "team_group" add constraint "team_group_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`alter table "team_member" add constraint "team_member_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`alter table "team_member" add constraint "team_member_user_id_foreign" foreign key ("user_id") references "user" ("id") on delete cascade;`);
    this.addSql(`alter table "team_member" add constraint "team_member_main_group_id_foreign" foreign key ("main_group_id") references "team_group" ("id") on delete set null;`);
    this.addSql(`alter table "team_member_group" add constraint "team_member_group_member_id_foreign" foreign key ("member_id") references "team_member" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "team_member_group" add constraint "team_member_group_group_id_foreign" foreign key ("group_id") references "team_group" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "team_log" add constraint "team_log_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`alter table "team_log" add constraint "team_log_team_member_id_foreign" foreign key ("team_member_id") references "team_member" ("id") on delete set null;`);
    this.addSql(`alter table "team_log" add constraint "team_log_target_team_member_id_foreign" foreign key ("target_team_member_id") references "team_member" ("id") on delete set null;`);
    this.addSql(`alter table "api_key" add constraint "api_key_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`alter table "api_key" add constraint "api_key_team_member_id_foreign" foreign key ("team_member_id") references "team_member" ("id") on delete cascade;`);
    this.addSql(`alter table "media_file" add constraint "media_file_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`alter table "media_file" add constraint "media_file_folder_id_foreign" foreign key ("folder_id") references "media_folder" ("id") on delete set null;`);
    this.addSql(`alter table "media_file" add constraint "media_file_uploaded_by_key_id_foreign" foreign key ("uploaded_by_key_id") references "api_key" ("id") on delete set null;`);
    // A file must carry all requested tags: array containment over a GIN index.
    this.addSql(`create index "media_file_tags_idx" on "media_file" using gin ("tags");`);
  }
}
