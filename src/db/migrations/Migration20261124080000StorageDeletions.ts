import { Migration } from '@mikro-orm/migrations';

/**
 * Objects to remove from storage once the rows that named them are gone (issue 16: deleting a
 * team). Written in the same transaction that deletes the rows, so a crash between the commit and
 * the removals leaves the keys here for the next drain instead of unreachable objects.
 */
export class Migration20261124080000StorageDeletions extends Migration {
  override up(): void {
    this.addSql(`create table "storage_deletion" (
      "id" uuid not null primary key,
      "kind" varchar(16) not null check ("kind" in ('object', 'upload', 'resumable')),
      "storage_key" varchar(512) not null,
      "data" jsonb null,
      "reason" varchar(64) not null,
      "attempts" integer not null default 0,
      "last_error" text null,
      "created_at" timestamptz not null);`);
    this.addSql(`create index "storage_deletion_created_at_index" on "storage_deletion" ("created_at");`);
  }
}
