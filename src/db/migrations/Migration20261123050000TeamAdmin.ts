import { Migration } from '@mikro-orm/migrations';

/**
 * Team administration through team routes: indexes that keep the filtered log list a backward
 * index walk at any size (the unfiltered list uses team_log_team_created_idx), and the team's
 * join requirements (spec 2.11 team join info).
 */
export class Migration20261123050000TeamAdmin extends Migration {
  override up(): void {
    this.addSql(`create index "team_log_team_action_created_idx" on "team_log" ("team_id", "action", "created_at");`);
    this.addSql(`create index "team_log_team_member_created_idx" on "team_log" ("team_id", "team_member_id", "created_at");`);
    this.addSql(`create index "team_log_team_target_created_idx" on "team_log" ("team_id", "target_team_member_id", "created_at");`);
    this.addSql(`alter table "team" add column "join_requirements" jsonb not null default '{"discord":false,"google":false,"minecraft":false,"hytale":false}';`);
    this.addSql(`alter table "team" add constraint "team_join_requirements_check" check (jsonb_typeof("join_requirements") = 'object');`);
  }

  override down(): void {
    this.addSql(`alter table "team" drop column "join_requirements";`);
    this.addSql(`drop index "team_log_team_target_created_idx";`);
    this.addSql(`drop index "team_log_team_member_created_idx";`);
    this.addSql(`drop index "team_log_team_action_created_idx";`);
  }
}
