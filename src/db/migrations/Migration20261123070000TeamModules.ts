import { Migration } from '@mikro-orm/migrations';

/** Team modules (spec 2.17): one row per team and module once it has been switched on or off. */
export class Migration20261123070000TeamModules extends Migration {
  override up(): void {
    this.addSql(`create table "team_module" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "team_id" uuid not null, "module_id" varchar(32) not null, "active" boolean not null default false, "settings" jsonb null, primary key ("id"));`);
    this.addSql(`alter table "team_module" add constraint "team_module_module_id_check" check (module_id in ('moduleApply', 'moduleGamePanel', 'moduleVoice', 'moduleBackup'));`);
    this.addSql(`alter table "team_module" add constraint "team_module_team_module_unique" unique ("team_id", "module_id");`);
    this.addSql(`alter table "team_module" add constraint "team_module_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
  }

  override down(): void {
    this.addSql(`drop table "team_module";`);
  }
}
