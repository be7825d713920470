import t from 'tap';
import type { Test } from 'tap';
import { connectPg } from '../helpers/database.ts';
import { startTestServer, type CreatedTeam } from '../helpers/server.ts';
import { uploadJson, uploadMultipart } from '../helpers/uploads.ts';

// media_tag_count (Migration20261121050000TagCounts) must always equal a fresh
// aggregation over media_file, whatever wrote the files.

const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), Buffer.alloc(100, 7)]);

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
const teamA = await server.createTeam('Alpha', 'enterprise');
const teamB = await server.createTeam('Bravo', 'enterprise');
const db = await connectPg(server.databaseUrl);
t.teardown(() => db.end());

const base = (team: CreatedTeam) => `/v1/cdn/media/${team.teamId}`;

async function upload(team: CreatedTeam, tags: string[]): Promise<string> {
  const query = tags.length > 0 ? `tags=${encodeURIComponent(tags.join(','))}` : '';
  const response = await uploadMultipart(server, team.teamId, team.key, { content: PNG, fileName: 'a.png', contentType: 'image/png' }, query);
  if (response.status !== 201) throw new Error(`upload failed: ${JSON.stringify(response.body)}`);
  return response.body.id;
}

/** The team's tags by use, recomputed from media_file (each file counts a tag once). */
async function fresh(teamId: string): Promise<{ tag: string; count: number }[]> {
  const { rows } = await db.query<{ tag: string; count: number }>(
    `select t.tag, count(distinct f.id)::int as count
       from media_file f, unnest(f.tags) as t(tag)
      where f.team_id = $1
      group by t.tag
      order by count desc, t.tag asc`,
    [teamId],
  );
  return rows;
}

/** The route's answer (every tag: each team here has fewer than 100) equals the aggregation, and so does the whole table. */
async function checkExact(t: Test, label: string): Promise<void> {
  for (const team of [teamA, teamB]) {
    const response = await server.media('GET', `${base(team)}/tags?limit=100`, team.key);
    t.equal(response.status, 200);
    t.same(response.body.tags, await fresh(team.teamId), `${label}: route equals the aggregation (${team === teamA ? 'A' : 'B'})`);
  }
  const { rows } = await db.query(
    `(select team_id, tag, count from media_tag_count
      except all
      select f.team_id, t.tag, count(distinct f.id)::int from media_file f, unnest(f.tags) as t(tag) group by f.team_id, t.tag)
     union all
     (select f.team_id, t.tag, count(distinct f.id)::int from media_file f, unnest(f.tags) as t(tag) group by f.team_id, t.tag
      except all
      select team_id, tag, count from media_tag_count)`,
  );
  t.same(rows, [], `${label}: media_tag_count equals the aggregation for every team`);
  const zero = await db.query('select 1 from media_tag_count where count <= 0');
  t.equal(zero.rowCount, 0, `${label}: no rows at 0`);
}

const idsA: string[] = [];
const idsB: string[] = [];

t.test('uploads', async (t) => {
  idsA.push(await upload(teamA, ['server:eu-1', 'map:1']));
  idsA.push(await upload(teamA, ['map:1', 'server:eu-1', 'event:cup']));
  idsA.push(await upload(teamA, ['server:eu-1', 'map:10']));
  idsA.push(await upload(teamA, [' server:eu-1', 'server:eu-1', 'docs_1']));
  idsA.push(await upload(teamA, []));
  const json = await uploadJson(server, teamA.teamId, teamA.key, { file: PNG.toString('base64'), fileName: 'j.png', tags: ['server:eu-1', 'json'] });
  t.equal(json.status, 201);
  idsA.push(json.body.id);
  idsB.push(await upload(teamB, ['server:eu-1', 'secret:bravo']));
  idsB.push(await upload(teamB, ['secret:bravo']));
  await checkExact(t, 'after uploads');
  t.same((await server.media('GET', `${base(teamA)}/tags?limit=2`, teamA.key)).body.tags, [
    { tag: 'server:eu-1', count: 5 },
    { tag: 'map:1', count: 2 },
  ]);
  t.same((await server.media('GET', `${base(teamA)}/tags?search=MAP:1`, teamA.key)).body.tags, [
    { tag: 'map:1', count: 2 },
    { tag: 'map:10', count: 1 },
  ]);
});

t.test('concurrent uploads with the same tags in different orders', async (t) => {
  const orders = [['c1', 'c2', 'c3'], ['c3', 'c2', 'c1'], ['c2', 'c3', 'c1'], ['c1', 'c3']];
  const ids = await Promise.all(Array.from({ length: 24 }, (_, index) => upload(teamA, orders[index % orders.length]!)));
  idsA.push(...ids);
  await checkExact(t, 'after concurrent uploads');
  t.same((await server.media('GET', `${base(teamA)}/tags?search=c`, teamA.key)).body.tags.slice(0, 3), [
    { tag: 'c1', count: 24 },
    { tag: 'c3', count: 24 },
    { tag: 'c2', count: 18 },
  ]);
});

t.test('PATCH replaces tags; other edits leave counts alone', async (t) => {
  const patch = (id: string, body: unknown) => server.media('PATCH', `${base(teamA)}/update/${id}`, teamA.key, { body });
  t.equal((await patch(idsA[0]!, { tags: ['map:1', 'fresh', 'fresh'] })).status, 200);
  await checkExact(t, 'after tag replacement');
  t.equal((await patch(idsA[1]!, { tags: [] })).status, 200);
  await checkExact(t, 'after clearing tags');
  t.equal((await patch(idsA[4]!, { tags: ['was-empty'] })).status, 200);
  t.equal((await patch(idsA[2]!, { fileName: 'renamed.png', public: false })).status, 200);
  t.equal((await patch(idsA[3]!, { tags: ['docs_1', 'server:eu-1'] })).status, 200, 'same tags, other order');
  await checkExact(t, 'after renames and reorders');
  t.notOk((await fresh(teamA.teamId)).some((row) => row.tag === 'event:cup'), 'a tag no file carries is gone');
  t.equal((await db.query(`select 1 from media_tag_count where tag = 'event:cup'`)).rowCount, 0);
});

t.test('bulk addTags, removeTags, move, setPublic and delete', async (t) => {
  const bulk = (body: unknown) => server.media('POST', `${base(teamA)}/bulk`, teamA.key, { body });
  const some = idsA.slice(0, 10);
  t.same((await bulk({ action: 'addTags', ids: some, tags: ['bulk', 'map:1'] })).body.affected, 10);
  await checkExact(t, 'after addTags');
  t.same((await bulk({ action: 'removeTags', ids: idsA.slice(5, 20), tags: ['bulk', 'c1', 'absent'] })).body.affected, 15);
  await checkExact(t, 'after removeTags');
  t.equal((await bulk({ action: 'move', ids: some, folderId: null })).status, 200);
  t.equal((await bulk({ action: 'setPublic', ids: some, public: false })).status, 200);
  await checkExact(t, 'after move and setPublic');
  const gone = idsA.splice(6, 5);
  t.same((await bulk({ action: 'delete', ids: gone })).body.affected, 5);
  await checkExact(t, 'after bulk delete');
});

t.test('delete', async (t) => {
  const id = idsA.shift()!;
  t.equal((await server.media('DELETE', `${base(teamA)}/delete/${id}`, teamA.key)).status, 200);
  await checkExact(t, 'after delete');
  t.equal((await server.media('DELETE', `${base(teamB)}/delete/${idsB.pop()!}`, teamB.key)).status, 200);
  await checkExact(t, 'after team B delete');
});

t.test('concurrent deletes, uploads and tag edits do not deadlock and stay exact', async (t) => {
  const victims = idsA.splice(0, 8);
  const results = await Promise.all([
    ...victims.map((id) => server.media('DELETE', `${base(teamA)}/delete/${id}`, teamA.key).then((response) => response.status)),
    ...Array.from({ length: 8 }, (_, index) => upload(teamA, index % 2 === 0 ? ['c1', 'map:1'] : ['map:1', 'c1']).then((id) => (idsA.push(id), 201))),
    ...idsA.slice(0, 6).map((id, index) =>
      server.media('PATCH', `${base(teamA)}/update/${id}`, teamA.key, { body: { tags: index % 2 === 0 ? ['c2', 'map:1'] : ['map:1', 'c3'] } }).then((r) => r.status),
    ),
  ]);
  t.ok(results.every((status) => status === 200 || status === 201), `statuses ${results.join(',')}`);
  await checkExact(t, 'after concurrent writes');
});

t.test('writes made in SQL: duplicates within a file, multi-row updates, team changes', async (t) => {
  await db.query(
    `insert into media_file (id, created_at, updated_at, team_id, file_name, storage_key, size, content_type, is_public, tags)
     select gen_random_uuid(), now(), now(), $1, 'sql-' || g, 'sql-' || g, 1, 'image/png', true, array['dup', 'dup', 'sql:' || (g % 3)]
       from generate_series(1, 30) g`,
    [teamA.teamId],
  );
  await checkExact(t, 'after a multi-row insert with duplicates');
  t.same((await db.query(`select count from media_tag_count where team_id = $1 and tag = 'dup'`, [teamA.teamId])).rows, [{ count: 30 }]);
  await db.query(`update media_file set tags = array_append(tags, 'sql:' || (size % 2)) where team_id = $1 and file_name like 'sql-%'`, [teamA.teamId]);
  await db.query(`update media_file set tags = array['dup'] where team_id = $1 and file_name like 'sql-1%'`, [teamA.teamId]);
  await checkExact(t, 'after multi-row updates');
  await db.query(`update media_file set team_id = $2 where team_id = $1 and file_name like 'sql-2%'`, [teamA.teamId, teamB.teamId]);
  await checkExact(t, 'after moving files to another team');
  await db.query(`delete from media_file where file_name like 'sql-%'`);
  await checkExact(t, 'after deleting them');
});

t.test('deleting a team removes its counts and never touches another team\'s', async (t) => {
  const teamC = await server.createTeam('Charlie', 'enterprise');
  await upload(teamC, ['server:eu-1', 'map:1', 'charlie']);
  await upload(teamC, ['server:eu-1']);
  const before = await db.query('select team_id, tag, count from media_tag_count where team_id <> $1 order by team_id, tag', [teamC.teamId]);
  t.same((await db.query(`select count from media_tag_count where team_id = $1 and tag = 'server:eu-1'`, [teamC.teamId])).rows, [{ count: 2 }]);
  await db.query('delete from team where id = $1', [teamC.teamId]);
  t.equal((await db.query('select 1 from media_tag_count where team_id = $1', [teamC.teamId])).rowCount, 0, 'its counts are gone');
  const after = await db.query('select team_id, tag, count from media_tag_count where team_id <> $1 order by team_id, tag', [teamC.teamId]);
  t.same(after.rows, before.rows, 'other teams unchanged');
  await checkExact(t, 'after deleting a team');
});
