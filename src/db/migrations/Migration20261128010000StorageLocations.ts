import { Migration } from '@mikro-orm/migrations';

/**
 * Where each stored object lives (issue 34): `storage_location` on every row that names a stored
 * object (media_file, team_file, todo_file; not the tus uploads and reservations, which are
 * in-flight state), and `storage_copy`, the progress of `storage migrate`.
 *
 * - `storage_location`: `fs` or `s3:<bucket>/<key prefix>` (src/storage/storage-location.ts), the
 *   store the object was written to. Null on the rows written before this migration: the service
 *   claims those at start-up for its configured store once it finds their objects there
 *   (src/domain/storage-locations/storage-placement.ts), and refuses to start while any row lives
 *   elsewhere.
 * - `storage_copy`: one row per object that `storage migrate` copied (or is copying) to `target`,
 *   from `source`. `verified`: the copy was read back with the row's size and content hash. A
 *   service starting on `target` moves the rows with a verified copy there; `storage prune-old`
 *   then removes their objects from `source`.
 * - `media_commit_uploads` (Migration20261123040000GroupCommit) again, writing the upload's
 *   `storage_location` from its batch entry.
 */
export class Migration20261128010000StorageLocations extends Migration {
  override up(): void {
    for (const table of ['media_file', 'team_file', 'todo_file']) {
      this.addSql(`alter table "${table}" add column "storage_location" text null;`);
      // Every start looks for rows without a location: with this, finding none reads nothing.
      this.addSql(`create index "${table}_unlocated_idx" on "${table}" ("storage_key") where "storage_location" is null;`);
    }
    this.addSql(`create table "storage_copy" (
      "target" text not null,
      "storage_key" varchar(512) not null,
      "source" text not null,
      "kind" varchar(16) not null check ("kind" in ('media', 'team-file', 'todo-file')),
      "verified" boolean not null default false,
      "size" bigint null,
      "hash" varchar(64) null,
      "updated_at" timestamptz not null,
      primary key ("target", "storage_key"));`);
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
  }

  override down(): void {
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
  insert into media_file (id, created_at, updated_at, team_id, folder_id, file_name, storage_key, size,
                          content_type, hash, is_public, tags, uploaded_by_key_id)
  select u.media_id, u.created_at, u.created_at, p_team_id, u.folder_id, u.file_name, u.storage_key, u.size,
         u.content_type, u.hash, u.is_public, array(select jsonb_array_elements_text(u.tags)), u.key_id
    from jsonb_to_recordset(p_uploads) as u(media_id uuid, created_at timestamptz, folder_id uuid, file_name text, storage_key text,
                                            size bigint, content_type text, hash text, is_public boolean, tags jsonb, key_id uuid, ord int)
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
    this.addSql(`drop table if exists "storage_copy";`);
    for (const table of ['media_file', 'team_file', 'todo_file']) {
      this.addSql(`drop index if exists "${table}_unlocated_idx";`);
      this.addSql(`alter table "${table}" drop column if exists "storage_location";`);
    }
  }
}
