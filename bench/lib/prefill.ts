/**
 * A team's media library of a fleet's size, written straight into the database before a
 * measurement: N rows older than the benchmark's uploads, each with a one-byte small-file content,
 * their ids random (v4) or in time order (v7, as the service makes them). What a fresh database
 * cannot show is what the indexes keyed by id cost once they no longer fit a few pages.
 */
import type pg from 'pg';

export interface Prefill {
  teamId: string;
  /** The API key recorded as each row's uploader. */
  keyId: string;
  rows: number;
  ids: 'v4' | 'v7';
}

export async function prefillMedia(client: pg.Client, { teamId, keyId, rows, ids }: Prefill): Promise<void> {
  // A v7 id in SQL (PostgreSQL 15 has no uuidv7()): 48 bits of milliseconds, the version, random bits, the variant.
  const id = ids === 'v7'
    ? `(lpad(to_hex((extract(epoch from s.ts) * 1000)::bigint), 12, '0') || '7' || substr(md5(random()::text), 1, 3)
        || to_hex(8 + floor(random() * 4)::int) || substr(md5(random()::text), 1, 15))::uuid`
    : 'gen_random_uuid()';
  await client.query(
    `insert into media_file (id, created_at, updated_at, team_id, file_name, storage_key, storage_location, size, content_type, is_public, tags, uploaded_by_key_id)
     select x.id, x.ts, x.ts, $1::uuid, 'prefill-' || x.i || '.json', 'media/' || $1::text || '/' || x.id, 'db', 1, 'application/json', false, '{}', $2
       from (select s.i, s.ts, ${id} as id
               from (select i, now() - interval '30 days' + i * interval '1 ms' as ts from generate_series(1, $3::int) i) s) x`,
    [teamId, keyId, rows],
  );
  await client.query(`insert into media_content (media_id, content) select id, '\\x00'::bytea from media_file where team_id = $1 and file_name like 'prefill-%'`, [teamId]);
  await client.query(`update team set used_storage = used_storage + $2 where id = $1`, [teamId, rows]);
  await client.query('vacuum analyze media_file, media_content');
}
