import { Migration } from '@mikro-orm/migrations';

/** News and their target groups, the team's news banner, links, and the portal environment (spec 2.16, 2.20; docs/workspace.md). */
export class Migration20261130030000NewsLinksPortal extends Migration {
  override up(): void {
    this.addSql(`create table "news" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "team_id" uuid not null, "creator_id" uuid null, "title" varchar(200) not null, "content" text not null, "is_important" boolean not null default false, "show_on_dashboard" boolean not null default false, "is_draft" boolean not null default true, "published_at" timestamptz null, primary key ("id"));`);
    this.addSql(`alter table "news" add constraint "news_title_check" check (length(title) >= 1);`);
    this.addSql(`alter table "news" add constraint "news_content_check" check (length(content) >= 1);`);
    this.addSql(`create index "news_team_draft_idx" on "news" ("team_id", "is_draft");`);
    this.addSql(`alter table "news" add constraint "news_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`alter table "news" add constraint "news_creator_id_foreign" foreign key ("creator_id") references "team_member" ("id") on delete set null;`);

    this.addSql(`create table "news_group" ("news_id" uuid not null, "group_id" uuid not null, primary key ("news_id", "group_id"));`);
    this.addSql(`create index "news_group_group_id_index" on "news_group" ("group_id");`);
    this.addSql(`alter table "news_group" add constraint "news_group_news_id_foreign" foreign key ("news_id") references "news" ("id") on delete cascade;`);
    this.addSql(`alter table "news_group" add constraint "news_group_group_id_foreign" foreign key ("group_id") references "team_group" ("id") on delete cascade;`);

    this.addSql(`create table "team_news_banner" ("team_id" uuid not null, "title" varchar(200) not null, "type" varchar(16) not null, "message_type" varchar(16) not null, "description" text null, "language" varchar(16) null, "button_text" varchar(100) null, "button_url" text null, "updated_at" timestamptz not null, primary key ("team_id"));`);
    this.addSql(`alter table "team_news_banner" add constraint "team_news_banner_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);

    this.addSql(`create table "team_link" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "team_id" uuid not null, "title" varchar(100) not null, "destination" text not null, "type" varchar(16) not null default 'REDIRECT', "icon" varchar(64) null, primary key ("id"));`);
    this.addSql(`alter table "team_link" add constraint "team_link_title_check" check (length(title) >= 1);`);
    this.addSql(`create index "team_link_team_id_index" on "team_link" ("team_id");`);
    this.addSql(`alter table "team_link" add constraint "team_link_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);

    this.addSql(`create table "portal_environment" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "team_id" uuid not null, "subdomain" varchar(32) not null, "name" varchar(32) not null, "domain_change_count" int not null default 0, "last_domain_change" timestamptz null, "logo_url" text null, "favicon_url" text null, "language" varchar(16) not null default 'en', "show_apply_panel" boolean not null default true, "show_team_overview" boolean not null default true, "skip_portal_page" boolean not null default true, "custom_domain" varchar(64) null, "custom_domain_state" varchar(16) null, "custom_domain_token" varchar(80) null, "custom_domain_errors" jsonb null, primary key ("id"));`);
    this.addSql(`alter table "portal_environment" add constraint "portal_environment_team_id_unique" unique ("team_id");`);
    this.addSql(`alter table "portal_environment" add constraint "portal_environment_subdomain_unique" unique ("subdomain");`);
    // Two teams may wait for the same domain; only one can hold it (the first whose TXT record is found).
    this.addSql(`create unique index "portal_environment_active_domain_unique" on "portal_environment" ("custom_domain") where "custom_domain_state" = 'active';`);
    this.addSql(`alter table "portal_environment" add constraint "portal_environment_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
  }

  override down(): void {
    this.addSql(`drop table "portal_environment";`);
    this.addSql(`drop table "team_link";`);
    this.addSql(`drop table "team_news_banner";`);
    this.addSql(`drop table "news_group";`);
    this.addSql(`drop table "news";`);
  }
}
