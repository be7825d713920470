import { Migration } from '@mikro-orm/migrations';

/**
 * Group commit of uploads (src/uploads/commit/group-commit.ts) and the
 * invalidation of cached team limits (src/domain/teams/team-state-cache.ts).
 *
 * `media_commit_uploads(team, uploads, ...)` commits a batch of one team's
 * uploads in one call, so one round trip, one transaction and one WAL flush:
 *
 * - Locks first the team row (FOR NO KEY UPDATE, as the single-upload UPDATE
 *   did), then the batch's target folders (FOR KEY SHARE, in id order): the
 *   order every upload commit has used (team, then the folder through the
 *   media_file foreign key), and the tag count trigger locks the team row
 *   before its count rows. A folder deleted meanwhile is simply not found.
 * - Decides the uploads in `ord` order, exactly as if they had come one by
 *   one: a folder gone, then the file size limit, then the storage limit
 *   against the running used + reserved bytes (an upload's own reservation
 *   counts as its own). An upload that does not fit leaves the running sum
 *   unchanged, so a later smaller one may still fit.
 * - Writes the committed ones with one statement per table: reservations
 *   deleted, media rows (one tag count trigger run), outbox events (one
 *   automation notify check), one usage upsert and one team update.
 * - Returns one row per upload: its outcome, the team's used storage right
 *   after it (what its own commit would have answered) and the file size limit.
 *
 * The limits follow team-limits.ts: an override key wins even when null
 * (unlimited); maxTeamStorage falls back as LIMIT_BYTES does (storage-quota.ts).
 * The defaults are the caller's (defaultPlanLimits), passed per call.
 *
 * Triggers NOTIFY `team_limits` (payload: the team id, or '' for every team)
 * when a team's overrides or plan change, a team is deleted, or a plan's
 * limits change; delivered on commit to every instance, whatever path made the
 * change (operator route, CLI, seed, plain SQL).
 */
export class Migration20261123040000GroupCommit extends Migration {
  override up(): void {
    this.addSql(`create function media_commit_uploads(p_team_id uuid, p_uploads jsonb, p_default_storage_kib bigint, p_default_file_bytes bigint)
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

    this.addSql(`create function team_limits_notify() returns trigger language plpgsql as $$
begin
  if tg_table_name = 'plan' then
    perform pg_notify('team_limits', '');
  elsif tg_op = 'DELETE' then
    perform pg_notify('team_limits', old.id::text);
  else
    perform pg_notify('team_limits', new.id::text);
  end if;
  return null;
end
$$;`);
    this.addSql(`create trigger "team_limits_changed" after update of limit_overrides, plan_id on "team" for each row
      when (old.limit_overrides is distinct from new.limit_overrides or old.plan_id is distinct from new.plan_id)
      execute function team_limits_notify();`);
    this.addSql(`create trigger "team_deleted" after delete on "team" for each row execute function team_limits_notify();`);
    this.addSql(`create trigger "plan_limits_changed" after update of limits on "plan" for each row
      when (old.limits is distinct from new.limits) execute function team_limits_notify();`);
  }

  override down(): void {
    this.addSql(`drop trigger if exists "plan_limits_changed" on "plan";`);
    this.addSql(`drop trigger if exists "team_deleted" on "team";`);
    this.addSql(`drop trigger if exists "team_limits_changed" on "team";`);
    this.addSql(`drop function if exists team_limits_notify();`);
    this.addSql(`drop function if exists media_commit_uploads(uuid, jsonb, bigint, bigint);`);
  }
}
