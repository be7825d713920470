import { Migration } from '@mikro-orm/migrations';

/**
 * Video posters (issue 35): MP4, WebM, Matroska and QuickTime uploads are queued for a thumbnail
 * too (a frame made with ffmpeg, src/previews/video-poster.ts). Only instances that have ffmpeg
 * claim them; without it they wait, and get their poster once an instance with ffmpeg runs.
 */
/** The content types a new media row is queued for a thumbnail of (reused by later migrations that redefine the trigger). */
export const TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif', 'image/avif', 'video/mp4', 'video/webm', 'video/x-matroska', 'video/quicktime'];
const VIDEO_TYPES = TYPES.filter((type) => type.startsWith('video/'));

export class Migration20261128020500VideoPosters extends Migration {
  override up(): void {
    const quoted = (types: string[]) => types.map((type) => `'${type}'`).join(', ');
    this.addSql(`create or replace function media_file_queue_thumbnail() returns trigger language plpgsql as $$
begin
  if new.content_type in (${quoted(TYPES)}) then
    new.thumbnail_status := 'pending';
  end if;
  return new;
end $$;`);
    this.addSql(`update "media_file" set "thumbnail_status" = 'pending' where "content_type" in (${quoted(VIDEO_TYPES)}) and "thumbnail_status" is null;`);
  }
}
