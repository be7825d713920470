import { Migration } from '@mikro-orm/migrations';

/**
 * Resumable (tus) uploads: one row per upload, the truth about its progress, so a PATCH can
 * continue on any instance sharing the database and the storage. The id is also the reservation's
 * id and the media file's id once complete. `lock_token`/`locked_until` are the per-upload PATCH
 * lease (claimed by one conditional UPDATE; a crashed holder's lease simply runs out).
 */
export class Migration20261124030000TusUploads extends Migration {
  override up(): void {
    this.addSql(`create table "tus_upload" (
      "id" uuid not null primary key,
      "team_id" uuid not null references "team" ("id") on delete cascade,
      "key_id" varchar(64) null,
      "storage_key" varchar(255) not null,
      "length" bigint not null check ("length" >= 0),
      "offset" bigint not null default 0 check ("offset" >= 0 and "offset" <= "length"),
      "metadata" text not null,
      "options" jsonb not null,
      "head" bytea not null default '\\x'::bytea,
      "sniffed" boolean not null default false,
      "sniffed_type" varchar(255) null,
      "multipart_id" varchar(1024) null,
      "part_count" int not null default 0,
      "tail_bytes" bigint not null default 0,
      "lock_token" uuid null,
      "locked_until" timestamptz null,
      "completed_at" timestamptz null,
      "expires_at" timestamptz not null,
      "created_at" timestamptz not null default now(),
      "updated_at" timestamptz not null default now());`);
    this.addSql(`create index "tus_upload_team_idx" on "tus_upload" ("team_id");`);
    this.addSql(`create index "tus_upload_expires_idx" on "tus_upload" ("expires_at");`);
  }
}
