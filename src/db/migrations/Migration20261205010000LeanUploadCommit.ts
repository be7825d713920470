import { Migration } from '@mikro-orm/migrations';

/**
 * Less written per upload (issue 38), measured with the log stream (docs/performance.md):
 *
 * - `media_commit_uploads` writes the `media.uploaded` outbox row only for a team with an enabled
 *   automation. The row, its three index entries, its foreign-key check and the dispatcher's later
 *   `fanned_out` update (a new row version: the flag is in a partial index's predicate, so never a
 *   HOT update) were paid by every upload of every team, for the few teams that have automations.
 *   The automations' dispatcher is the outbox's only reader. An automation is created and changed
 *   under its team row's lock (automation.service.ts), which conflicts with the lock the batch
 *   commit takes first: a batch commits either before the change or after it, and then sees it.
 * - `media_file_team_folder_idx` (team_id, folder_id) is dropped: `media_file_team_folder_created_idx`
 *   (team_id, folder_id, created_at desc, id desc) serves every lookup it did, and each upload paid
 *   an entry in both.
 * - Small files' bytes (`media_content.content`) are kept in the row (storage `main`): compressed
 *   when that makes them fit a page, out of line only when nothing else fits, where `extended`
 *   moved every value above 2 KB into the TOAST table, one row and one index entry per ~2 KB
 *   chunk. They are compressed with lz4 where the server has it (PostgreSQL 14 and later built
 *   with lz4, as Debian's is), which compresses several times faster than pglz; a server built
 *   without it keeps pglz.
 */
export class Migration20261205010000LeanUploadCommit extends Migration {
  override up(): void {
    this.addSql(`create or replace function media_commit_uploads(p_team_id uuid, p_uploads jsonb, p_default_storage_kib bigint, p_default_file_bytes bigint, p_contents bytea)
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
  v_has_automations boolean;
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
  -- The outbox only for a team with an automation that could take the event: the row, its indexes
  -- and the fan-out's later update cost every other team's uploads for nothing. An automation is
  -- created and changed under the team row's lock (automation.service.ts), which conflicts with the
  -- one taken above, so a batch commits either before the change or after it, and then sees it.
  select exists (select 1 from automation a where a.team_id = p_team_id and a.enabled and a.event_kinds ? 'media.uploaded') into v_has_automations;
  if v_has_automations then
    insert into media_event (id, team_id, kind, occurred_at, payload)
    select u.event_id, p_team_id, 'media.uploaded', u.created_at, u.payload
      from jsonb_to_recordset(p_uploads) as u(media_id uuid, event_id uuid, created_at timestamptz, payload jsonb, ord int)
     where u.media_id = any(v_committed)
     order by u.ord;
  end if;
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
    this.addSql(`drop index if exists "media_file_team_folder_idx";`);
    this.addSql(`alter table "media_content" alter column "content" set storage main;`);
    this.addSql(`do $$
begin
  alter table "media_content" alter column "content" set compression lz4;
exception when feature_not_supported then
  null; -- a server built without lz4: pglz stays
end
$$;`);
  }

  override down(): void {
    this.addSql(`alter table "media_content" alter column "content" set compression default, alter column "content" set storage extended;`);
    this.addSql(`create index if not exists "media_file_team_folder_idx" on "media_file" ("team_id", "folder_id");`);
    this.addSql(`create or replace function media_commit_uploads(p_team_id uuid, p_uploads jsonb, p_default_storage_kib bigint, p_default_file_bytes bigint, p_contents bytea)
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
  }
}
