import { Migration } from '@mikro-orm/migrations';

/**
 * Runs of periodic jobs, one row per job and slot: the first instance whose
 * `insert ... on conflict do nothing` returns a row owns the slot (the hour of
 * the folder rule sweep), so a run happens once however many instances share
 * the database.
 */
export class Migration20261121030000FolderSweep extends Migration {
  override up(): void {
    this.addSql(
      `create table "job_run" ("job" text not null, "slot" timestamptz not null, "started_at" timestamptz not null default now(), "finished_at" timestamptz null, primary key ("job", "slot"));`,
    );
    // The sweep reads folders with rules; most folders have none.
    this.addSql(`create index "media_folder_rules_idx" on "media_folder" ("id") where "retention_days" is not null or "max_files" is not null;`);
  }

  override down(): void {
    this.addSql(`drop index if exists "media_folder_rules_idx";`);
    this.addSql(`drop table if exists "job_run";`);
  }
}
