import { Migration } from '@mikro-orm/migrations';

/**
 * Small files kept in the database (issue 38): `media_content` holds the bytes of a media file
 * whose row's `storage_location` is `db` (src/storage/db/), written by the same batch commit as
 * its row, so one WAL flush makes a whole batch of small uploads durable, bytes and rows, with no
 * file or S3 request per file. A row deleted takes its bytes with it (on delete cascade).
 *
 * `media_commit_uploads` and `media_commit_uploads_idempotent` gain a fifth parameter, the batch's
 * small files one after the other in one `bytea`, which node-postgres sends in binary: an entry of
 * the batch names its bytes by `content_at` (offset) and `content_length`. Not as base64 inside the
 * JSON batch: JSON.stringify scans a long string character by character (~120 µs for an 8 KiB
 * file's base64); nor as a `bytea[]`, which goes as hex text that PostgreSQL parses element by
 * element (~170 µs per 8 KiB file sent and parsed, against ~120 µs in binary; docs/performance.md).
 * The four-parameter functions stay for instances of the previous version during a rolling restart
 * (the plain one now calls the new one with no contents).
 */
export class Migration20261201020000MediaContent extends Migration {
  override up(): void {
    this.addSql(`create table "media_content" (
      "media_id" uuid not null primary key references "media_file" ("id") on delete cascade,
      "content" bytea not null);`);
    this.addSql(`create function media_commit_uploads(p_team_id uuid, p_uploads jsonb, p_default_storage_kib bigint, p_default_file_bytes bigint, p_contents bytea)
returns table (o_media_id uuid, o_outcome text, o_used_storage bigint, o_max_file bigint)
language plpgsql as $$
declare
  v_used bigint;
  v_reserved bigint;
  v_overrides jsonb;
  v_plan jsonb;
  v_limit bigint;
  v_max_file bigint;
  v_folders uuid[];
  v_committed uuid[] := '{}';
  v_added bigint := 0;
  v_released bigint := 0;
  r record;
begin
  select t.used_storage, t.reserved_storage, t.limit_overrides, p.limits
    into v_used, v_reserved, v_overrides, v_plan
    from team t left join plan p on p.id = t.plan_id
   where t.id = p_team_id
     for no key update of t;
  if not found then
    return query select u.media_id, 'team_gone'::text, null::bigint, null::bigint
      from jsonb_to_recordset(p_uploads) as u(media_id uuid, ord int) order by u.ord;
    return;
  end if;
  v_limit := (case when v_overrides -> 'maxTeamStorage' is not null then (v_overrides ->> 'maxTeamStorage')::bigint
                   else (coalesce(v_plan, jsonb_build_object('maxTeamStorage', p_default_storage_kib)) ->> 'maxTeamStorage')::bigint end) * 1024;
  v_max_file := case when v_overrides -> 'maxMediaFileSize' is not null then (v_overrides ->> 'maxMediaFileSize')::bigint
                     when v_plan -> 'maxMediaFileSize' is not null then (v_plan ->> 'maxMediaFileSize')::bigint
                     else p_default_file_bytes end;

  select array_agg(s.id) into v_folders from (
    select f.id from media_folder f
     where f.team_id = p_team_id
       and f.id in (select u.folder_id from jsonb_to_recordset(p_uploads) as u(folder_id uuid) where u.folder_id is not null)
     order by f.id
       for key share) as s;

  for r in
    select u.media_id, u.folder_id, u.size, coalesce(res.bytes, 0) as held
      from jsonb_to_recordset(p_uploads) as u(media_id uuid, folder_id uuid, size bigint, ord int)
      left join upload_reservation res on res.id = u.media_id
     order by u.ord
  loop
    o_media_id := r.media_id;
    o_used_storage := null;
    o_max_file := v_max_file;
    if r.folder_id is not null and not (r.folder_id = any(coalesce(v_folders, '{}'))) then
      o_outcome := 'folder_gone';
    elsif v_max_file is not null and r.size > v_max_file then
      o_outcome := 'too_large';
    elsif v_limit is not null and v_used + v_reserved - r.held + r.size > v_limit then
      o_outcome := 'over_quota';
    else
      v_used := v_used + r.size;
      v_reserved := v_reserved - r.held;
      v_added := v_added + r.size;
      v_released := v_released + r.held;
      v_committed := v_committed || r.media_id;
      o_outcome := 'committed';
      o_used_storage := v_used;
    end if;
    return next;
  end loop;

  if cardinality(v_committed) = 0 then
    return;
  end if;

  update team set used_storage = used_storage + v_added, reserved_storage = reserved_storage - v_released where id = p_team_id;
  delete from upload_reservation where id = any(v_committed);
  insert into media_file (id, created_at, updated_at, team_id, folder_id, file_name, storage_key, storage_location, size,
                          content_type, hash, is_public, tags, uploaded_by_key_id)
  select u.media_id, u.created_at, u.created_at, p_team_id, u.folder_id, u.file_name, u.storage_key, u.storage_location, u.size,
         u.content_type, u.hash, u.is_public, array(select jsonb_array_elements_text(u.tags)), u.key_id
    from jsonb_to_recordset(p_uploads) as u(media_id uuid, created_at timestamptz, folder_id uuid, file_name text, storage_key text,
                                            storage_location text, size bigint, content_type text, hash text, is_public boolean,
                                            tags jsonb, key_id uuid, ord int)
   where u.media_id = any(v_committed)
   order by u.ord;
  insert into media_event (id, team_id, kind, occurred_at, payload)
  select u.event_id, p_team_id, 'media.uploaded', u.created_at, u.payload
    from jsonb_to_recordset(p_uploads) as u(media_id uuid, event_id uuid, created_at timestamptz, payload jsonb, ord int)
   where u.media_id = any(v_committed)
   order by u.ord;
  insert into media_usage_daily (team_id, day, uploads, upload_bytes, api_uploads)
  values (p_team_id, (now() at time zone 'utc')::date, cardinality(v_committed), v_added, cardinality(v_committed))
  on conflict (team_id, day) do update set uploads = media_usage_daily.uploads + excluded.uploads,
    upload_bytes = media_usage_daily.upload_bytes + excluded.upload_bytes,
    api_uploads = media_usage_daily.api_uploads + excluded.api_uploads;
  insert into media_content (media_id, content)
  select u.media_id, substring(p_contents from u.content_at + 1 for u.content_length)
    from jsonb_to_recordset(p_uploads) as u(media_id uuid, content_at int, content_length int)
   where u.content_at is not null and u.media_id = any(v_committed);
end
$$;`);
    this.addSql(`create or replace function media_commit_uploads(p_team_id uuid, p_uploads jsonb, p_default_storage_kib bigint, p_default_file_bytes bigint)
returns table (o_media_id uuid, o_outcome text, o_used_storage bigint, o_max_file bigint)
language sql as $$
  select * from media_commit_uploads(p_team_id, p_uploads, p_default_storage_kib, p_default_file_bytes, null::bytea)
$$;`);
    this.addSql(`create function media_commit_uploads_idempotent(p_team_id uuid, p_uploads jsonb, p_default_storage_kib bigint, p_default_file_bytes bigint, p_contents bytea)
returns table (o_media_id uuid, o_outcome text, o_used_storage bigint, o_max_file bigint)
language plpgsql as $$
declare
  v_lost uuid[];
  v_rest jsonb;
  r record;
begin
  perform 1 from team t where t.id = p_team_id for no key update of t;
  perform 1 from idempotency_key k
    join jsonb_to_recordset(p_uploads) as u(idem_key text) on k.team_id = p_team_id and k.key = u.idem_key
   order by k.key
     for no key update of k;
  select coalesce(array_agg(u.media_id), '{}') into v_lost
    from jsonb_to_recordset(p_uploads) as u(media_id uuid, idem_key text, idem_claim uuid)
   where u.idem_key is not null
     and not exists (select 1 from idempotency_key k
                      where k.team_id = p_team_id and k.key = u.idem_key and k.claim_id = u.idem_claim and k.state = 'running');
  select coalesce(jsonb_agg(e), '[]'::jsonb) into v_rest
    from jsonb_array_elements(p_uploads) as e
   where not ((e ->> 'media_id')::uuid = any(v_lost));

  for r in select * from media_commit_uploads(p_team_id, v_rest, p_default_storage_kib, p_default_file_bytes, p_contents) loop
    if r.o_outcome = 'committed' then
      update idempotency_key k
         set state = 'completed', status = 201, content_fingerprint = u.idem_fingerprint,
             body = left(u.answer, -1) || ',"usedTeamStorage":' || r.o_used_storage || '}'
        from jsonb_to_recordset(p_uploads) as u(media_id uuid, idem_key text, idem_claim uuid, idem_fingerprint text, answer text)
       where u.media_id = r.o_media_id and u.idem_key is not null
         and k.team_id = p_team_id and k.key = u.idem_key and k.claim_id = u.idem_claim;
    end if;
    o_media_id := r.o_media_id;
    o_outcome := r.o_outcome;
    o_used_storage := r.o_used_storage;
    o_max_file := r.o_max_file;
    return next;
  end loop;

  return query select lost, 'claim_lost'::text, null::bigint, null::bigint from unnest(v_lost) as lost;
end
$$;`);
  }

  override down(): void {
    this.addSql(`drop function if exists media_commit_uploads_idempotent(uuid, jsonb, bigint, bigint, bytea);`);
    this.addSql(`create or replace function media_commit_uploads(p_team_id uuid, p_uploads jsonb, p_default_storage_kib bigint, p_default_file_bytes bigint)
returns table (o_media_id uuid, o_outcome text, o_used_storage bigint, o_max_file bigint)
language plpgsql as $$
declare
  v_used bigint;
  v_reserved bigint;
  v_overrides jsonb;
  v_plan jsonb;
  v_limit bigint;
  v_max_file bigint;
  v_folders uuid[];
  v_committed uuid[] := '{}';
  v_added bigint := 0;
  v_released bigint := 0;
  r record;
begin
  select t.used_storage, t.reserved_storage, t.limit_overrides, p.limits
    into v_used, v_reserved, v_overrides, v_plan
    from team t left join plan p on p.id = t.plan_id
   where t.id = p_team_id
     for no key update of t;
  if not found then
    return query select u.media_id, 'team_gone'::text, null::bigint, null::bigint
      from jsonb_to_recordset(p_uploads) as u(media_id uuid, ord int) order by u.ord;
    return;
  end if;
  v_limit := (case when v_overrides -> 'maxTeamStorage' is not null then (v_overrides ->> 'maxTeamStorage')::bigint
                   else (coalesce(v_plan, jsonb_build_object('maxTeamStorage', p_default_storage_kib)) ->> 'maxTeamStorage')::bigint end) * 1024;
  v_max_file := case when v_overrides -> 'maxMediaFileSize' is not null then (v_overrides ->> 'maxMediaFileSize')::bigint
                     when v_plan -> 'maxMediaFileSize' is not null then (v_plan ->> 'maxMediaFileSize')::bigint
                     else p_default_file_bytes end;

  select array_agg(s.id) into v_folders from (
    select f.id from media_folder f
     where f.team_id = p_team_id
       and f.id in (select u.folder_id from jsonb_to_recordset(p_uploads) as u(folder_id uuid) where u.folder_id is not null)
     order by f.id
       for key share) as s;

  for r in
    select u.media_id, u.folder_id, u.size, coalesce(res.bytes, 0) as held
      from jsonb_to_recordset(p_uploads) as u(media_id uuid, folder_id uuid, size bigint, ord int)
      left join upload_reservation res on res.id = u.media_id
     order by u.ord
  loop
    o_media_id := r.media_id;
    o_used_storage := null;
    o_max_file := v_max_file;
    if r.folder_id is not null and not (r.folder_id = any(coalesce(v_folders, '{}'))) then
      o_outcome := 'folder_gone';
    elsif v_max_file is not null and r.size > v_max_file then
      o_outcome := 'too_large';
    elsif v_limit is not null and v_used + v_reserved - r.held + r.size > v_limit then
      o_outcome := 'over_quota';
    else
      v_used := v_used + r.size;
      v_reserved := v_reserved - r.held;
      v_added := v_added + r.size;
      v_released := v_released + r.held;
      v_committed := v_committed || r.media_id;
      o_outcome := 'committed';
      o_used_storage := v_used;
    end if;
    return next;
  end loop;

  if cardinality(v_committed) = 0 then
    return;
  end if;

  update team set used_storage = used_storage + v_added, reserved_storage = reserved_storage - v_released where id = p_team_id;
  delete from upload_reservation where id = any(v_committed);
  insert into media_file (id, created_at, updated_at, team_id, folder_id, file_name, storage_key, storage_location, size,
                          content_type, hash, is_public, tags, uploaded_by_key_id)
  select u.media_id, u.created_at, u.created_at, p_team_id, u.folder_id, u.file_name, u.storage_key, u.storage_location, u.size,
         u.content_type, u.hash, u.is_public, array(select jsonb_array_elements_text(u.tags)), u.key_id
    from jsonb_to_recordset(p_uploads) as u(media_id uuid, created_at timestamptz, folder_id uuid, file_name text, storage_key text,
                                            storage_location text, size bigint, content_type text, hash text, is_public boolean,
                                            tags jsonb, key_id uuid, ord int)
   where u.media_id = any(v_committed)
   order by u.ord;
  insert into media_event (id, team_id, kind, occurred_at, payload)
  select u.event_id, p_team_id, 'media.uploaded', u.created_at, u.payload
    from jsonb_to_recordset(p_uploads) as u(media_id uuid, event_id uuid, created_at timestamptz, payload jsonb, ord int)
   where u.media_id = any(v_committed)
   order by u.ord;
  insert into media_usage_daily (team_id, day, uploads, upload_bytes, api_uploads)
  values (p_team_id, (now() at time zone 'utc')::date, cardinality(v_committed), v_added, cardinality(v_committed))
  on conflict (team_id, day) do update set uploads = media_usage_daily.uploads + excluded.uploads,
    upload_bytes = media_usage_daily.upload_bytes + excluded.upload_bytes,
    api_uploads = media_usage_daily.api_uploads + excluded.api_uploads;
end
$$;`);
    this.addSql(`drop function if exists media_commit_uploads(uuid, jsonb, bigint, bigint, bytea);`);
    this.addSql(`drop table if exists "media_content";`);
  }
}
