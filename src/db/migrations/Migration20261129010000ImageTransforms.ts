import { Migration } from '@mikro-orm/migrations';

/**
 * Resized images on request (issue 35): the variants kept in storage under `transforms/`
 * (src/previews/transform-cache.ts), one row per (file, variant), for the cache's lookups, its
 * size budget and its least recently used eviction. Rows go with their file and their team
 * (cascade); deleting a file or a team first reads their keys to remove the objects.
 */
export class Migration20261129010000ImageTransforms extends Migration {
  override up(): void {
    this.addSql(`create table "media_transform" (
      "media_id" uuid not null references "media_file" ("id") on delete cascade,
      "team_id" uuid not null references "team" ("id") on delete cascade,
      "variant" varchar(64) not null,
      "storage_key" varchar(255) not null,
      "size" int not null check ("size" >= 0),
      "created_at" timestamptz not null,
      "last_used_at" timestamptz not null,
      primary key ("media_id", "variant"));`);
    this.addSql(`create index "media_transform_team_idx" on "media_transform" ("team_id");`);
    this.addSql(`create index "media_transform_last_used_idx" on "media_transform" ("last_used_at");`);
  }

  override down(): void {
    this.addSql('drop table if exists "media_transform";');
  }
}
