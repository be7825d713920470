/**
 * Query plans of the media list at a million files for one team.
 *
 *   node bench/query-plans.ts postgres://postgres@127.0.0.1:5432/postgres [files]
 *
 * Creates a scratch database next to the given one, migrates it, fills it with
 * generate_series, ANALYZEs, prints EXPLAIN (ANALYZE, BUFFERS) of the main
 * list, count, tags and usage queries, then drops the database.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { initOrm, migrate } from '../src/db/orm.ts';
import { entities } from '../src/domain/entities.ts';

const serverUrl = process.argv[2];
const files = Number(process.argv[3] ?? 1_000_000);
if (!serverUrl) {
  console.error('usage: node bench/query-plans.ts <postgres url> [files]');
  process.exit(2);
}

const name = `bench_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: serverUrl });
await admin.connect();
await admin.query(`create database ${pg.escapeIdentifier(name)}`);
const url = new URL(serverUrl);
url.pathname = `/${name}`;

const TEAM = '00000000-0000-4000-8000-000000000001';
const FOLDER_ROOT = '00000000-0000-4000-8000-0000000000f0';

try {
  const orm = await initOrm({ databaseUrl: url.toString(), poolSize: 2, entities });
  await migrate(orm);
  await orm.close();

  const db = new pg.Client({ connectionString: url.toString() });
  await db.connect();
  const step = async (label: string, sql: string) => {
    const started = performance.now();
    await db.query(sql);
    console.log(`-- ${label}: ${Math.round(performance.now() - started)} ms`);
  };
  try {
    await step('teams', `insert into team (id, created_at, updated_at, name, used_storage)
      select ('00000000-0000-4000-8000-00000000000' || g)::uuid, now(), now(), 'team' || g, 0 from generate_series(1, 5) g`);
    // 50 folders for the big team: 10 top-level, each with 4 children (one of those with a grandchild).
    await step('folders', `
      insert into media_folder (id, created_at, updated_at, team_id, parent_id, name, depth)
      select ('00000000-0000-4000-8000-0000000000' || lpad(to_hex(240 + g), 2, '0'))::uuid, now(), now(), '${TEAM}', null, 'top' || g, 1
        from generate_series(0, 9) g;
      insert into media_folder (id, created_at, updated_at, team_id, parent_id, name, depth)
      select ('00000000-0000-4000-8000-0000000001' || lpad(to_hex(g), 2, '0'))::uuid, now(), now(), '${TEAM}',
             ('00000000-0000-4000-8000-0000000000' || lpad(to_hex(240 + g / 4), 2, '0'))::uuid, 'child' || g, 2
        from generate_series(0, 39) g;`);
    // Names like 'screenshot-000123.png', 'server-log-eu-1-000124.log'; tags from small and large vocabularies;
    // content types spread over images (60%), video, audio and documents; 70% of files in a folder.
    await step(`insert ${files} media_file rows for one team`, `
      insert into media_file (id, created_at, updated_at, team_id, folder_id, file_name, storage_key, size, content_type, hash, is_public, tags)
      select gen_random_uuid(),
             now() - make_interval(secs => g * 30),
             now(),
             '${TEAM}',
             case when g % 10 < 3 then null
                  when g % 10 < 5 then ('00000000-0000-4000-8000-0000000000' || lpad(to_hex(240 + (g / 10) % 10), 2, '0'))::uuid
                  else ('00000000-0000-4000-8000-0000000001' || lpad(to_hex((g / 10) % 40), 2, '0'))::uuid end,
             (array['screenshot', 'server-log', 'crash-dump', 'map-preview', 'Replay', 'avatar'])[1 + g % 6] || '-' ||
               (array['eu-1', 'us-2', 'asia-3', 'dev'])[1 + g % 4] || '-' || lpad(g::text, 7, '0') ||
               (array['.png', '.log', '.dmp', '.jpg', '.mp4', '.ogg'])[1 + g % 6],
             'k' || g,
             1000 + g % 100000,
             (array['image/png', 'text/plain; charset=utf-8', 'application/octet-stream', 'image/jpeg', 'video/mp4', 'audio/ogg',
                    'image/webp', 'application/pdf', 'image/png', 'image/gif'])[1 + g % 10],
             md5(g::text),
             g % 3 <> 0,
             array_remove(array[
               'server:' || (array['eu-1', 'us-2', 'asia-3', 'dev'])[1 + g % 4],
               'map:' || (g % 50),
               case when g % 7 = 0 then 'event:tournament' end,
               case when g % 1000 = 0 then 'rare:' || (g % 5000) end,
               'kind:' || (array['screenshot', 'log', 'dump', 'preview', 'replay', 'avatar'])[1 + g % 6]
             ], null)
        from generate_series(1, ${files}) g`);
    // One distinct tag per file: 20,000 tags per team, for the tag list's indexes.
    await step('other teams: 4 x 20,000 rows', `
      insert into media_file (id, created_at, updated_at, team_id, folder_id, file_name, storage_key, size, content_type, hash, is_public, tags)
      select gen_random_uuid(), now() - make_interval(secs => g), now(), ('00000000-0000-4000-8000-00000000000' || (2 + g % 4))::uuid,
             null, 'other-' || g || '.png', 'o' || g, 500, 'image/png', null, true, array['server:eu-1', 'map:1', 'match:' || g]
        from generate_series(1, 80000) g`);
    await step('usage rows', `
      insert into media_usage_daily (team_id, day, uploads, upload_bytes, api_uploads)
      select '${TEAM}', (now() at time zone 'utc')::date - g, 1000 + g, 1000000 * g, 900 + g from generate_series(0, 400) g`);
    await step('analyze', 'analyze');

    const explain = async (label: string, sql: string) => {
      const { rows } = await db.query<{ 'QUERY PLAN': string }>(`explain (analyze, buffers) ${sql}`);
      console.log(`\n=== ${label}\n${sql.replace(/\s+/g, ' ').trim()}\n${rows.map((row) => row['QUERY PLAN']).join('\n')}`);
    };
    const page = `order by f.created_at desc, f.id desc limit 50 offset 0`;
    const subtree = `with recursive tree (id) as (select id from media_folder where id = '${FOLDER_ROOT}' and team_id = '${TEAM}'
      union all select c.id from media_folder c join tree on c.parent_id = tree.id where c.team_id = '${TEAM}') select id from tree`;
    const { rows: tree } = await db.query<{ id: string }>(subtree);
    const treeList = tree.map((row) => `'${row.id}'`).join(', ');
    const document = `(split_part(f.content_type, ';', 1) in ('application/pdf', 'application/json', 'application/xml', 'application/rtf', 'application/msword',
      'application/vnd.ms-excel', 'application/vnd.ms-powerpoint', 'application/epub+zip', 'application/x-yaml', 'application/yaml')
      or split_part(f.content_type, ';', 1) like 'text/%' or split_part(f.content_type, ';', 1) like 'application/vnd.openxmlformats-officedocument.%'
      or split_part(f.content_type, ';', 1) like 'application/vnd.oasis.opendocument.%')`;
    const filters: [string, string][] = [
      ['no filter', `f.team_id = '${TEAM}'`],
      ['folderId', `f.team_id = '${TEAM}' and f.folder_id = '${FOLDER_ROOT}'`],
      ['folderId + includeSubfolders', `f.team_id = '${TEAM}' and f.folder_id in (${treeList})`],
      ['folderId=none', `f.team_id = '${TEAM}' and f.folder_id is null`],
      ['tags AND (common)', `f.team_id = '${TEAM}' and f.tags @> array['server:eu-1', 'event:tournament']::text[]`],
      ['tags AND (rare)', `f.team_id = '${TEAM}' and f.tags @> array['rare:1000', 'server:eu-1']::text[]`],
      ['search (common)', `f.team_id = '${TEAM}' and lower(f.file_name) like lower('%replay-eu%') escape '!'`],
      ['search (rare)', `f.team_id = '${TEAM}' and lower(f.file_name) like lower('%0123456%') escape '!'`],
      ['type=image', `f.team_id = '${TEAM}' and f.content_type like 'image/%'`],
      ['type=document', `f.team_id = '${TEAM}' and ${document}`],
      ['type=audio + search + folder', `f.team_id = '${TEAM}' and f.folder_id in (${treeList}) and f.content_type like 'audio/%' and lower(f.file_name) like lower('%asia%') escape '!'`],
    ];
    for (const [label, where] of filters) {
      await explain(`list: ${label}`, `select f.* from media_file f where ${where} ${page}`);
      await explain(`count: ${label}`, `select count(*) from media_file f where ${where}`);
    }
    await explain('list: no filter, page 200', `select f.* from media_file f where f.team_id = '${TEAM}' order by f.created_at desc, f.id desc limit 50 offset 9950`);
    await explain('folder subtree (recursive CTE)', subtree);
    // GET /tags reads media_tag_count (kept by triggers on media_file, Migration20261121050000TagCounts).
    await explain('tags: top 20', `select c.tag, c.count from media_tag_count c
      where c.team_id = '${TEAM}' order by c.count desc, c.tag asc limit 20`);
    await explain('tags: search "map:1"', `select c.tag, c.count from media_tag_count c
      where c.team_id = '${TEAM}' and c.tag like '%map:1%' escape '!' order by (c.tag like 'map:1%' escape '!') desc, c.count desc, c.tag asc limit 20`);
    await explain('tags: search "a" (short, many matches)', `select c.tag, c.count from media_tag_count c
      where c.team_id = '${TEAM}' and c.tag like '%a%' escape '!' order by (c.tag like 'a%' escape '!') desc, c.count desc, c.tag asc limit 20`);
    const OTHER = '00000000-0000-4000-8000-000000000002';
    await explain('tags: top 20 of 20,000 distinct tags', `select c.tag, c.count from media_tag_count c
      where c.team_id = '${OTHER}' order by c.count desc, c.tag asc limit 20`);
    await explain('tags: search "match:123" among 20,000 distinct tags', `select c.tag, c.count from media_tag_count c
      where c.team_id = '${OTHER}' and c.tag like '%match:123%' escape '!' order by (c.tag like 'match:123%' escape '!') desc, c.count desc, c.tag asc limit 20`);
    await explain('tags: search "1" among 20,000 distinct tags', `select c.tag, c.count from media_tag_count c
      where c.team_id = '${OTHER}' and c.tag like '%1%' escape '!' order by (c.tag like '1%' escape '!') desc, c.count desc, c.tag asc limit 20`);
    await explain('tags: the old full aggregation, for comparison', `select t.tag, count(*)::int as count from media_file f cross join lateral unnest(f.tags) as t(tag)
      where f.team_id = '${TEAM}' group by t.tag order by count(*) desc, t.tag asc limit 20`);
    await explain('usage: media bytes', `select coalesce(sum(size), 0) from media_file where team_id = '${TEAM}'`);
    await explain('usage: days', `select to_char(d.day, 'YYYY-MM-DD'), coalesce(u.uploads, 0) from generate_series((now() at time zone 'utc')::date - 89,
      (now() at time zone 'utc')::date, interval '1 day') as d(day) left join media_usage_daily u on u.team_id = '${TEAM}' and u.day = d.day::date order by d.day`);

    // Cost of the media_tag_count triggers on writes (the 1M-row insert above includes them too).
    console.log('');
    await step('tag counts: backfill query alone (as in the migration, not written)', `select count(*) from (select f.team_id, t.tag, count(*)
      from media_file f cross join lateral (select distinct unnest(f.tags)) as t(tag) group by f.team_id, t.tag) x`);
    await step('tag counts: update 100,000 rows without touching tags', `update media_file set is_public = not is_public
      where team_id = '${TEAM}' and storage_key in (select 'k' || g from generate_series(1, 100000) g)`);
    await step('tag counts: add a tag to 100,000 rows', `update media_file set tags = tags || array['bench:added']
      where team_id = '${TEAM}' and storage_key in (select 'k' || g from generate_series(1, 100000) g)`);
    await step('tag counts: delete 100,000 rows', `delete from media_file where team_id = '${TEAM}' and storage_key in (select 'k' || g from generate_series(100001, 200000) g)`);
    const { rows: drift } = await db.query(`select count(*)::int as n from (
      (select team_id, tag, count from media_tag_count except all
       select f.team_id, t.tag, count(*)::int from media_file f cross join lateral (select distinct unnest(f.tags)) as t(tag) group by 1, 2)
      union all
      (select f.team_id, t.tag, count(*)::int from media_file f cross join lateral (select distinct unnest(f.tags)) as t(tag) group by 1, 2
       except all select team_id, tag, count from media_tag_count)) d`);
    console.log(`-- tag counts: rows differing from a fresh aggregation: ${drift[0]?.n}`);
  } finally {
    await db.end();
  }
} finally {
  await admin.query(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`);
  await admin.end();
}
