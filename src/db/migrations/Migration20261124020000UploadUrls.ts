import { Migration } from '@mikro-orm/migrations';

/**
 * Upload URLs (docs/upload-urls.md): what a URL fixes, and its state. `open` until an upload
 * claims it (`claimed`, one at a time across instances: a conditional UPDATE), back to `open`
 * when that upload stored nothing, `used` once its file is committed. The creating key's
 * deletion (revocation) removes its URLs; rows are swept once expired.
 */
export class Migration20261124020000UploadUrls extends Migration {
  override up(): void {
    this.addSql(`create table "upload_url" (
      "id" uuid not null,
      "team_id" uuid not null,
      "key_id" uuid not null,
      "file_name" varchar(255) null,
      "folder_path" text[] null,
      "folder_id" uuid null,
      "tags" text[] not null default '{}',
      "is_public" boolean null,
      "max_size_bytes" bigint null,
      "content_types" text[] null,
      "created_at" timestamptz not null default now(),
      "expires_at" timestamptz not null,
      "state" varchar(16) not null default 'open',
      "claimed_at" timestamptz null,
      "media_id" uuid null,
      primary key ("id"),
      constraint "upload_url_state_check" check ("state" in ('open', 'claimed', 'used')));`);
    this.addSql(`create index "upload_url_team_id_expires_at_index" on "upload_url" ("team_id", "expires_at");`);
    this.addSql(`create index "upload_url_key_id_index" on "upload_url" ("key_id");`);
    this.addSql(`alter table "upload_url" add constraint "upload_url_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`alter table "upload_url" add constraint "upload_url_key_id_foreign" foreign key ("key_id") references "api_key" ("id") on delete cascade;`);
  }

  override down(): void {
    this.addSql(`drop table "upload_url";`);
  }
}
