import { Migration } from '@mikro-orm/migrations';

/**
 * Per-team tag use counts for GET /tags (MediaTagCount), kept exact by
 * statement-level triggers on media_file, so the list reads a few rows instead
 * of aggregating unnest(tags) over every file of the team.
 *
 * - One trigger per event (INSERT, UPDATE, DELETE): PostgreSQL allows transition
 *   tables only on single-event triggers, and not with `UPDATE OF columns`, so
 *   the UPDATE trigger fires on every update and the function keeps only rows
 *   whose tags or team changed (moves, renames and visibility changes write
 *   nothing). A full join on id also stays exact if an id ever changed.
 * - A file counts each distinct tag once (`select distinct unnest(tags)`).
 * - Every statement that changes counts first locks the teams' rows
 *   (FOR NO KEY UPDATE, ordered by id). Uploads already update team.used_storage
 *   before inserting the file and deletes update it after removing theirs; taking
 *   the team row before the count rows in every path keeps the two from
 *   deadlocking, and count rows of one team are then written by one
 *   transaction at a time.
 * - Decrements clamp at 0 and rows reaching 0 are deleted.
 * - TRUNCATE media_file empties the table.
 * - The backfill runs after the triggers are created in the same transaction:
 *   CREATE TRIGGER holds a lock that blocks writers to media_file until commit,
 *   so no write falls between the backfill and the triggers.
 */
export class Migration20261121050000TagCounts extends Migration {
  override up(): void {
    this.addSql(`create extension if not exists pg_trgm;`);
    this.addSql(
      `create table "media_tag_count" ("team_id" uuid not null, "tag" varchar(64) not null, "count" integer not null, primary key ("team_id", "tag"));`,
    );
    this.addSql(`alter table "media_tag_count" add constraint "media_tag_count_count_check" check (count >= 0);`);
    this.addSql(
      `alter table "media_tag_count" add constraint "media_tag_count_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`,
    );
    // The unfiltered list: the team's top N read in order from the index.
    this.addSql(`create index "media_tag_count_team_count_idx" on "media_tag_count" ("team_id", "count" desc, "tag");`);
    // search: a substring (`tag like '%text%'`); tags are stored lower-case.
    this.addSql(`create index "media_tag_count_tag_trgm_idx" on "media_tag_count" using gin ("tag" gin_trgm_ops);`);

    this.addSql(`create function media_tag_count_apply(p_teams uuid[], p_tags text[], p_deltas integer[]) returns void
language plpgsql as $$
begin
  if coalesce(cardinality(p_tags), 0) = 0 then
    return;
  end if;
  perform 1 from team where id in (select distinct unnest(p_teams)) order by id for no key update;
  insert into media_tag_count (team_id, tag, count)
  select d.team_id, d.tag, d.delta
    from unnest(p_teams, p_tags, p_deltas) as d(team_id, tag, delta)
   where d.delta > 0
   order by d.team_id, d.tag
  on conflict (team_id, tag) do update set count = media_tag_count.count + excluded.count;
  update media_tag_count c
     set count = greatest(c.count + d.delta, 0)
    from unnest(p_teams, p_tags, p_deltas) as d(team_id, tag, delta)
   where d.delta < 0 and c.team_id = d.team_id and c.tag = d.tag;
  delete from media_tag_count c
   using unnest(p_teams, p_tags, p_deltas) as d(team_id, tag, delta)
   where d.delta < 0 and c.team_id = d.team_id and c.tag = d.tag and c.count = 0;
end
$$;`);

    this.addSql(`create function media_tag_count_sync() returns trigger
language plpgsql as $$
declare
  v_teams uuid[];
  v_tags text[];
  v_deltas integer[];
begin
  if tg_op = 'TRUNCATE' then
    delete from media_tag_count;
    return null;
  elsif tg_op = 'INSERT' then
    select array_agg(x.team_id), array_agg(x.tag), array_agg(x.delta) into v_teams, v_tags, v_deltas
      from (select r.team_id, t.tag, count(*)::integer as delta
              from new_rows r cross join lateral (select distinct unnest(r.tags)) as t(tag)
             where t.tag is not null
             group by r.team_id, t.tag) as x;
  elsif tg_op = 'DELETE' then
    select array_agg(x.team_id), array_agg(x.tag), array_agg(x.delta) into v_teams, v_tags, v_deltas
      from (select r.team_id, t.tag, -count(*)::integer as delta
              from old_rows r cross join lateral (select distinct unnest(r.tags)) as t(tag)
             where t.tag is not null
             group by r.team_id, t.tag) as x;
  else
    select array_agg(x.team_id), array_agg(x.tag), array_agg(x.delta) into v_teams, v_tags, v_deltas
      from (select r.team_id, t.tag, sum(r.sign)::integer as delta
              from old_rows o
              full join new_rows n on n.id = o.id
             cross join lateral (values (o.team_id, o.tags, -1), (n.team_id, n.tags, 1)) as r(team_id, tags, sign)
             cross join lateral (select distinct unnest(r.tags)) as t(tag)
             where (o.id is null or n.id is null or o.tags is distinct from n.tags or o.team_id is distinct from n.team_id)
               and t.tag is not null
             group by r.team_id, t.tag
            having sum(r.sign) <> 0) as x;
  end if;
  perform media_tag_count_apply(v_teams, v_tags, v_deltas);
  return null;
end
$$;`);

    this.addSql(`create trigger "media_file_tag_count_insert" after insert on "media_file" referencing new table as new_rows
      for each statement execute function media_tag_count_sync();`);
    this.addSql(`create trigger "media_file_tag_count_update" after update on "media_file" referencing old table as old_rows new table as new_rows
      for each statement execute function media_tag_count_sync();`);
    this.addSql(`create trigger "media_file_tag_count_delete" after delete on "media_file" referencing old table as old_rows
      for each statement execute function media_tag_count_sync();`);
    this.addSql(`create trigger "media_file_tag_count_truncate" after truncate on "media_file"
      for each statement execute function media_tag_count_sync();`);

    this.addSql(`insert into media_tag_count (team_id, tag, count)
      select f.team_id, t.tag, count(*)::integer
        from media_file f cross join lateral (select distinct unnest(f.tags)) as t(tag)
       where t.tag is not null
       group by f.team_id, t.tag;`);
  }

  override down(): void {
    this.addSql(`drop trigger if exists "media_file_tag_count_truncate" on "media_file";`);
    this.addSql(`drop trigger if exists "media_file_tag_count_delete" on "media_file";`);
    this.addSql(`drop trigger if exists "media_file_tag_count_update" on "media_file";`);
    this.addSql(`drop trigger if exists "media_file_tag_count_insert" on "media_file";`);
    this.addSql(`drop function if exists media_tag_count_sync();`);
    this.addSql(`drop function if exists media_tag_count_apply(uuid[], text[], integer[]);`);
    this.addSql(`drop table if exists "media_tag_count";`);
  }
}
