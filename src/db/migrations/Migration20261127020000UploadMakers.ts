import { Migration } from '@mikro-orm/migrations';

/**
 * Upload URLs and tus uploads follow their maker's access (docs/upload-urls.md): each row records
 * the credential that made it, so that a use can ask whether that credential may still upload.
 * `key_prefix` is the prefix of the key's secret at creation (a reroll changes it: the URL was made
 * with the old secret); `user_id` is the user of the making session. Rows made before are filled
 * from the keys and sessions as they are now; a session's tus upload made before recorded no
 * session, so it stays unfollowed until it completes or expires (at most TUS_EXPIRY_SECONDS).
 */
export class Migration20261127020000UploadMakers extends Migration {
  override up(): void {
    this.addSql(`alter table "upload_url" add column "key_prefix" varchar(16) null, add column "user_id" uuid null;`);
    this.addSql(`update "upload_url" u set "key_prefix" = k."prefix" from "api_key" k where k."id" = u."key_id";`);
    this.addSql(`update "upload_url" u set "user_id" = s."user_id" from "user_session" s where s."id" = u."session_id";`);
    this.addSql(`alter table "tus_upload" add column "key_prefix" varchar(16) null, add column "session_id" uuid null, add column "user_id" uuid null;`);
    this.addSql(`update "tus_upload" u set "key_prefix" = k."prefix" from "api_key" k where k."id"::text = u."key_id";`);
  }

  override down(): void {
    this.addSql(`alter table "tus_upload" drop column "key_prefix", drop column "session_id", drop column "user_id";`);
    this.addSql(`alter table "upload_url" drop column "key_prefix", drop column "user_id";`);
  }
}
