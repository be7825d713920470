import type { EntityManager } from '@mikro-orm/postgresql';
import { LIMIT_BYTES } from './storage-quota.ts';

/** What an upload's commit writes: the media row's columns and the outbox payload. */
export interface UploadCommitRecord {
  mediaId: string;
  teamId: string;
  folderId: string | null;
  fileName: string;
  storageKey: string;
  size: number;
  contentType: string;
  hash: string | null;
  isPublic: boolean;
  tags: string[];
  uploadedByKeyId: string | null;
  createdAt: Date;
  eventId: string;
  /** The `media.uploaded` event's payload. */
  payload: unknown;
}

// One statement, so one round trip and atomic on its own: the quota moves the upload's size from
// reserved to used only if the team's limit still holds (and the folder, if any, still exists);
// the reservation, media row, outbox event and daily usage are written only if it did. Nothing is
// written when no row comes back. Arrays and the payload go in as JSON text: MikroORM inlines
// parameters, and a JS array would not become a PostgreSQL array.
const COMMIT_UPLOAD = `
with held as (select coalesce(sum(bytes), 0) as bytes from upload_reservation where id = ?),
     counted as (
       update team t set used_storage = t.used_storage + ?, reserved_storage = t.reserved_storage - held.bytes
         from held, team tt left join plan p on p.id = tt.plan_id
        where t.id = ? and tt.id = t.id
          and (${LIMIT_BYTES} is null or t.used_storage + t.reserved_storage - held.bytes + ? <= ${LIMIT_BYTES})
          and (?::uuid is null or exists (select 1 from media_folder f where f.id = ?::uuid and f.team_id = t.id))
       returning t.used_storage),
     released as (delete from upload_reservation where id = ? and exists (select 1 from counted)),
     file as (
       insert into media_file (id, created_at, updated_at, team_id, folder_id, file_name, storage_key, size,
                               content_type, hash, is_public, tags, uploaded_by_key_id)
       select ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, array(select jsonb_array_elements_text(?::jsonb)), ? from counted
       returning id),
     event as (
       insert into media_event (id, team_id, kind, occurred_at, payload)
       select ?, ?, 'media.uploaded', ?, ?::jsonb from file),
     usage as (
       insert into media_usage_daily (team_id, day, uploads, upload_bytes, api_uploads)
       select ?, (now() at time zone 'utc')::date, 1, ?, 1 from file
       on conflict (team_id, day) do update set uploads = media_usage_daily.uploads + 1,
         upload_bytes = media_usage_daily.upload_bytes + excluded.upload_bytes,
         api_uploads = media_usage_daily.api_uploads + 1)
select used_storage from counted`;

/**
 * Makes an upload visible: the media row, its `media.uploaded` outbox event
 * and the day's usage, with the team's counted storage, in one statement.
 * Returns the team's new used storage, or null when nothing was written
 * because the limit would be passed or the folder is gone.
 */
export async function commitUpload(em: EntityManager, record: UploadCommitRecord): Promise<number | null> {
  const { mediaId, teamId, folderId, size } = record;
  const rows = await em.execute<{ used_storage: string | number }[]>(COMMIT_UPLOAD, [
    mediaId, size, teamId, size, folderId, folderId, mediaId,
    mediaId, record.createdAt, record.createdAt, teamId, folderId, record.fileName, record.storageKey, size,
    record.contentType, record.hash, record.isPublic, JSON.stringify(record.tags), record.uploadedByKeyId,
    record.eventId, teamId, record.createdAt, JSON.stringify(record.payload),
    teamId, size,
  ]);
  const row = rows[0];
  return row ? Number(row.used_storage) : null;
}
