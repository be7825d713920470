import { Migration } from '@mikro-orm/migrations';

/**
 * Team files, to-do boards, to-dos and to-do files (spec 2.4), and the commit
 * that counts a team or to-do file in the team's one storage counter.
 *
 * `team_storage_commit_file(team, upload, size, ...)` is the single-file twin of
 * media_commit_uploads (Migration20261123040000GroupCommit), with the same
 * rules and the same lock: it locks the team row (FOR NO KEY UPDATE), refuses
 * a file above the file size limit (`too_large`) or one that does not fit in
 * used + reserved - its own reservation (`over_quota`), else moves the file's
 * size into used_storage and its reservation out of reserved_storage and
 * deletes the reservation row. The caller writes the file's row (and its team
 * log entry) in the same transaction, so both commit or neither. Media and the
 * other kinds therefore queue on the same team row and can never together
 * pass maxTeamStorage, on any number of instances.
 *
 * Per-kind bytes (GET /usage) are the sums of the kinds' size columns, not
 * counters: used_storage stays the one counter, and a media upload's commit
 * is unchanged.
 */
export class Migration20261124050000TeamFiles extends Migration {
  override up(): void {
    this.addSql(`create table "team_file" ("id" uuid not null, "team_id" uuid not null, "upload_team_member_id" uuid null, "target_team_member_id" uuid null,
      "file_name" varchar(255) not null, "storage_key" varchar(255) not null, "size" bigint not null, "content_type" varchar(255) not null, "hash" varchar(64) not null,
      "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "team_file" add constraint "team_file_storage_key_unique" unique ("storage_key");`);
    this.addSql(`alter table "team_file" add constraint "team_file_size_check" check (size >= 0);`);
    this.addSql(`create index "team_file_team_created_idx" on "team_file" ("team_id", "created_at");`);
    this.addSql(`create index "team_file_team_uploader_idx" on "team_file" ("team_id", "upload_team_member_id", "created_at");`);
    this.addSql(`create index "team_file_team_target_idx" on "team_file" ("team_id", "target_team_member_id", "created_at");`);
    this.addSql(`alter table "team_file" add constraint "team_file_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`alter table "team_file" add constraint "team_file_upload_team_member_id_foreign" foreign key ("upload_team_member_id") references "team_member" ("id") on delete set null;`);
    this.addSql(`alter table "team_file" add constraint "team_file_target_team_member_id_foreign" foreign key ("target_team_member_id") references "team_member" ("id") on delete set null;`);

    this.addSql(`create table "todo_board" ("id" uuid not null, "team_id" uuid not null, "title" varchar(100) not null, "description" text not null default '',
      "sort" int not null default 0, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "todo_board_team_id_index" on "todo_board" ("team_id");`);
    this.addSql(`alter table "todo_board" add constraint "todo_board_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);

    this.addSql(`create table "todo" ("id" uuid not null, "team_id" uuid not null, "board_id" uuid not null, "title" varchar(200) not null, "description" text not null default '',
      "state" varchar(16) not null default 'open', "assignee_team_member_id" uuid null, "due_date" timestamptz null, "sort" int not null default 0,
      "creator_team_member_id" uuid null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "todo" add constraint "todo_state_check" check (state in ('open', 'in_progress', 'done'));`);
    this.addSql(`create index "todo_team_id_index" on "todo" ("team_id");`);
    this.addSql(`create index "todo_board_sort_idx" on "todo" ("board_id", "sort");`);
    this.addSql(`alter table "todo" add constraint "todo_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    // A board is deleted with its to-dos by the service (which frees their files first); the cascade only backs up a team's deletion.
    this.addSql(`alter table "todo" add constraint "todo_board_id_foreign" foreign key ("board_id") references "todo_board" ("id") on delete cascade;`);
    this.addSql(`alter table "todo" add constraint "todo_assignee_team_member_id_foreign" foreign key ("assignee_team_member_id") references "team_member" ("id") on delete set null;`);
    this.addSql(`alter table "todo" add constraint "todo_creator_team_member_id_foreign" foreign key ("creator_team_member_id") references "team_member" ("id") on delete set null;`);

    this.addSql(`create table "todo_file" ("id" uuid not null, "team_id" uuid not null, "todo_id" uuid not null, "upload_team_member_id" uuid null,
      "file_name" varchar(255) not null, "storage_key" varchar(255) not null, "size" bigint not null, "content_type" varchar(255) not null, "hash" varchar(64) not null,
      "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "todo_file" add constraint "todo_file_storage_key_unique" unique ("storage_key");`);
    this.addSql(`alter table "todo_file" add constraint "todo_file_size_check" check (size >= 0);`);
    this.addSql(`create index "todo_file_team_created_idx" on "todo_file" ("team_id", "created_at");`);
    this.addSql(`create index "todo_file_todo_created_idx" on "todo_file" ("todo_id", "created_at");`);
    this.addSql(`alter table "todo_file" add constraint "todo_file_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    // No cascade from the to-do: deleting a to-do must free its files' bytes, which the service does in the same transaction.
    this.addSql(`alter table "todo_file" add constraint "todo_file_todo_id_foreign" foreign key ("todo_id") references "todo" ("id");`);
    this.addSql(`alter table "todo_file" add constraint "todo_file_upload_team_member_id_foreign" foreign key ("upload_team_member_id") references "team_member" ("id") on delete set null;`);

    this.addSql(`create function team_storage_commit_file(p_team_id uuid, p_upload_id uuid, p_size bigint, p_default_storage_kib bigint, p_default_file_bytes bigint)
returns table (o_outcome text, o_used_storage bigint, o_max_file bigint)
language plpgsql as $$
declare
  v_used bigint;
  v_reserved bigint;
  v_overrides jsonb;
  v_plan jsonb;
  v_limit bigint;
  v_held bigint;
begin
  select t.used_storage, t.reserved_storage, t.limit_overrides, p.limits
    into v_used, v_reserved, v_overrides, v_plan
    from team t left join plan p on p.id = t.plan_id
   where t.id = p_team_id
     for no key update of t;
  if not found then
    return query select 'team_gone'::text, null::bigint, null::bigint;
    return;
  end if;
  v_limit := (case when v_overrides -> 'maxTeamStorage' is not null then (v_overrides ->> 'maxTeamStorage')::bigint
                   else (coalesce(v_plan, jsonb_build_object('maxTeamStorage', p_default_storage_kib)) ->> 'maxTeamStorage')::bigint end) * 1024;
  o_max_file := case when v_overrides -> 'maxMediaFileSize' is not null then (v_overrides ->> 'maxMediaFileSize')::bigint
                     when v_plan -> 'maxMediaFileSize' is not null then (v_plan ->> 'maxMediaFileSize')::bigint
                     else p_default_file_bytes end;
  select coalesce(sum(r.bytes), 0) into v_held from upload_reservation r where r.id = p_upload_id;
  if o_max_file is not null and p_size > o_max_file then
    o_outcome := 'too_large';
  elsif v_limit is not null and v_used + v_reserved - v_held + p_size > v_limit then
    o_outcome := 'over_quota';
  else
    update team set used_storage = used_storage + p_size, reserved_storage = reserved_storage - v_held where id = p_team_id
      returning used_storage into o_used_storage;
    delete from upload_reservation where id = p_upload_id;
    o_outcome := 'committed';
  end if;
  return next;
end
$$;`);
  }

  override down(): void {
    this.addSql(`drop function if exists team_storage_commit_file(uuid, uuid, bigint, bigint, bigint);`);
    this.addSql(`drop table if exists "todo_file";`);
    this.addSql(`drop table if exists "todo";`);
    this.addSql(`drop table if exists "todo_board";`);
    this.addSql(`drop table if exists "team_file";`);
  }
}
