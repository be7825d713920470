import { Migration } from '@mikro-orm/migrations';

/**
 * Thumbnails of image uploads (issue 35): their state on the media row, which is also the job
 * queue the thumbnailers of every instance claim from (src/previews/thumbnail-queue.ts).
 *
 * - `thumbnail_status`: null (not an image), `pending` (to make), `ready`, `failed` (sharp could
 *   not make one, or every attempt failed: never tried again). A trigger sets `pending` on insert
 *   for the image types, so every path that adds media (the group commit, tus, upload URLs) queues
 *   its images in the transaction that commits them, at no cost to anything else.
 * - `thumbnail_claim`, `thumbnail_claimed_until`: the claim of the instance making it (a token, and
 *   when it expires); an expired claim (its instance died) is claimed again. `thumbnail_attempts`
 *   bounds the retries.
 * - The images already stored are queued too: their thumbnails are made in the background.
 */
const THUMBNAIL_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif', 'image/avif'];

export class Migration20261128020000Thumbnails extends Migration {
  override up(): void {
    const types = THUMBNAIL_TYPES.map((type) => `'${type}'`).join(', ');
    this.addSql(`alter table "media_file"
      add column "thumbnail_status" varchar(16) null check ("thumbnail_status" in ('pending', 'ready', 'failed')),
      add column "thumbnail_attempts" smallint not null default 0,
      add column "thumbnail_claimed_until" timestamptz null,
      add column "thumbnail_claim" uuid null,
      add column "thumbnail_size" int null,
      add column "thumbnail_error" varchar(255) null;`);
    this.addSql(`create index "media_file_thumbnail_pending_idx" on "media_file" ("created_at") where "thumbnail_status" = 'pending';`);
    this.addSql(`create or replace function media_file_queue_thumbnail() returns trigger language plpgsql as $$
begin
  if new.content_type in (${types}) then
    new.thumbnail_status := 'pending';
  end if;
  return new;
end $$;`);
    this.addSql(`create trigger "media_file_queue_thumbnail" before insert on "media_file" for each row execute function media_file_queue_thumbnail();`);
    this.addSql(`update "media_file" set "thumbnail_status" = 'pending' where "content_type" in (${types});`);
  }

  override down(): void {
    this.addSql('drop trigger if exists "media_file_queue_thumbnail" on "media_file";');
    this.addSql('drop function if exists media_file_queue_thumbnail();');
    this.addSql(`alter table "media_file" drop column "thumbnail_status", drop column "thumbnail_attempts",
      drop column "thumbnail_claimed_until", drop column "thumbnail_claim", drop column "thumbnail_size", drop column "thumbnail_error";`);
  }
}
