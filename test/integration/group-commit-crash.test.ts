import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { connectPg, createTestDatabase } from '../helpers/database.ts';
import { api, spawnService } from '../helpers/service-process.ts';
import { subscribeToUploads } from '../helpers/outbox.ts';
import { driverSettings } from '../helpers/storage.ts';
import { pngLike } from '../helpers/uploads.ts';
import { eventually, sleep } from '../helpers/wait.ts';

// Group commit (issue 18.3) and crashes: an instance SIGKILLed while a batch commit is under way
// leaves no half batch. Each batch is one statement in one transaction: it either commits whole
// (even with its client gone) or, when its database session dies too, leaves nothing: rows and,
// for small files kept in the database, their bytes.

const AUTH_SECRET = 'group-commit-crash-operator-secret';
const BATCH = 20;

/** Where the uploads' bytes go: the object store (fs), or the database with their rows (issue 38) under fs and s3 settings. */
const PLACEMENTS = [
  { name: 'files in fs', driver: 'fs', databaseFileMaxBytes: 0 },
  { name: 'small files in the database, fs', driver: 'fs', databaseFileMaxBytes: 65_536 },
  { name: 'small files in the database, s3', driver: 's3', databaseFileMaxBytes: 65_536 },
] as const;

for (const placement of PLACEMENTS) t.test(`SIGKILL in the middle of batch commits (${placement.name}): every upload is fully there or leaves nothing`, async (t) => {
  const databaseUrl = await createTestDatabase(t);
  const dataDir = await mkdtemp(join(tmpdir(), 'media-group-crash-'));
  await chmod(dataDir, 0o755);
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp',
    DATA_DIR: dataDir, DATABASE_URL: databaseUrl, AUTH_SECRET, PORT: '0', LOG_LEVEL: 'info', RATE_LIMIT_POINTS: '100000',
    // Every upload of the test admitted at once, so the batches are as large as the test needs.
    UPLOAD_CONCURRENCY: '100',
    DATABASE_FILE_MAX_BYTES: String(placement.databaseFileMaxBytes),
  };
  for (const [name, value] of Object.entries(driverSettings(placement.driver))) env[name] = String(value);
  const service = await spawnService(t, { env });
  const db = await connectPg(databaseUrl);
  t.teardown(() => db.end());

  async function createTeam(name: string) {
    const created = await api(service.port, 'POST', '/v1/admin/teams', { authSecret: AUTH_SECRET }, { name, plan: 'enterprise' });
    if (created.status !== 201) throw new Error(JSON.stringify(created.body));
    const team = { teamId: created.body.team.id as string, key: created.body.apiKey.key as string };
    const folder = await api(service.port, 'POST', `/v1/cdn/media/${team.teamId}/folders`, { authorization: `Bearer ${team.key}` }, { name: 'crash' });
    if (folder.status !== 201) throw new Error(JSON.stringify(folder.body));
    await subscribeToUploads(db, team.teamId); // its uploads write outbox rows, counted below
    return { ...team, folderId: folder.body.id as string };
  }

  function upload(team: { teamId: string; key: string }, name: string, extra: Record<string, unknown> = {}) {
    const body = JSON.stringify({ file: pngLike(2000 + name.length).toString('base64'), fileName: name, ...extra });
    return fetch(`http://127.0.0.1:${service.port}/v1/cdn/media/${team.teamId}/upload`, {
      method: 'POST', headers: { authorization: `Bearer ${team.key}`, 'content-type': 'application/json' }, body,
    }).then((response) => response.status, () => 0); // the service dies under them
  }

  /**
   * Backends waiting for the row `id` of `table`: the one that holds the row's tuple lock while it
   * sleeps on the holder's transaction (the batch's parameters are bound, so its query text does
   * not name the team).
   */
  async function waitingForRow(table: 'team' | 'media_folder', id: string): Promise<number[]> {
    const rows = await db.query<{ pid: number }>(
      `select l.pid from pg_locks l, ${table} r
        where r.id = $1 and l.locktype = 'tuple' and l.granted and l.relation = '${table}'::regclass
          and l.page = (r.ctid::text::point)[0] and l.tuple = (r.ctid::text::point)[1]
          and exists (select 1 from pg_locks w where w.pid = l.pid and not w.granted)`,
      [id],
    );
    return rows.rows.map((row) => row.pid);
  }

  const kept = await createTeam('KeptBatch');
  const lost = await createTeam('LostBatch');
  const teams = [kept, lost];

  // 1. The team rows are held: each team's first upload commits alone and waits for its row.
  const teamLock = await connectPg(databaseUrl);
  await teamLock.query('begin');
  await teamLock.query('select 1 from team where id = any($1::uuid[]) order by id for no key update', [teams.map((team) => team.teamId)]);
  const leads = teams.map((team) => upload(team, 'lead.png'));
  t.ok(await eventually(async () => (await waitingForRow('team', kept.teamId)).length === 1 && (await waitingForRow('team', lost.teamId)).length === 1), 'each lead waits for its team row');
  // 2. BATCH uploads per team into its folder finish meanwhile and queue behind the lead.
  const followers = teams.flatMap((team) => Array.from({ length: BATCH }, (_, i) => upload(team, `f${i}.png`, { folderId: team.folderId, tags: ['crash'] })));
  await sleep(1500);
  // 3. The folders are held, then the team rows released: the leads commit, and each team's batch
  //    of BATCH starts, locks its team row and waits for its folder, inside its transaction.
  const folderLock = await connectPg(databaseUrl);
  await folderLock.query('begin');
  await folderLock.query('select 1 from media_folder where id = any($1::uuid[]) for update', [teams.map((team) => team.folderId)]);
  await teamLock.query('commit');
  await teamLock.end();
  t.ok(await eventually(async () => (await waitingForRow('media_folder', kept.folderId)).length === 1 && (await waitingForRow('media_folder', lost.folderId)).length === 1), 'both batches are under way');
  const [lostBatch] = await waitingForRow('media_folder', lost.folderId);

  // 4. The instance dies. One batch's session dies too (as in a crash of the database side), the other's goes on alone.
  service.child.kill('SIGKILL');
  await service.exited;
  await db.query('select pg_terminate_backend($1)', [lostBatch]);
  await folderLock.query('commit');
  await folderLock.end();
  t.ok(await eventually(async () => (await db.query(`select 1 from pg_stat_activity where query like '%media_commit_uploads%' and pid <> pg_backend_pid()`)).rowCount === 0), 'no batch commit runs any more');
  await Promise.all([...leads, ...followers]);

  async function records(teamId: string) {
    const count = async (sql: string) => Number((await db.query<{ n: string }>(sql, [teamId])).rows[0]?.n ?? 0);
    return {
      files: await count('select count(*) as n from media_file where team_id = $1'),
      inFolder: await count('select count(*) as n from media_file where team_id = $1 and folder_id is not null'),
      sumOfSizes: await count('select coalesce(sum(size), 0) as n from media_file where team_id = $1'),
      usedStorage: await count('select used_storage as n from team where id = $1'),
      reserved: await count('select reserved_storage as n from team where id = $1'),
      events: await count(`select count(*) as n from media_event where team_id = $1`),
      eventsOfFiles: await count(`select count(*) as n from media_event e join media_file f on f.id = (e.payload -> 'media' ->> 'id')::uuid where e.team_id = $1`),
      usage: await count('select coalesce(sum(uploads), 0) as n from media_usage_daily where team_id = $1'),
      tagCount: await count(`select coalesce(sum(count), 0) as n from media_tag_count where team_id = $1 and tag = 'crash'`),
      bytesInDatabase: await count(`select count(*) as n from media_content c join media_file f on f.id = c.media_id where f.team_id = $1 and f.storage_location = 'db' and octet_length(c.content) = f.size`),
    };
  }

  const inDatabase = placement.databaseFileMaxBytes > 0;
  const keptRecords = await records(kept.teamId);
  t.same(keptRecords, {
    files: BATCH + 1, inFolder: BATCH, sumOfSizes: keptRecords.sumOfSizes, usedStorage: keptRecords.sumOfSizes, reserved: 0,
    events: BATCH + 1, eventsOfFiles: BATCH + 1, usage: BATCH + 1, tagCount: BATCH, bytesInDatabase: inDatabase ? BATCH + 1 : 0,
  }, 'the batch whose session lived committed whole, though nobody heard the answer');
  const lostRecords = await records(lost.teamId);
  t.same(lostRecords, {
    files: 1, inFolder: 0, sumOfSizes: lostRecords.sumOfSizes, usedStorage: lostRecords.sumOfSizes, reserved: 0,
    events: 1, eventsOfFiles: 1, usage: 1, tagCount: 0, bytesInDatabase: inDatabase ? 1 : 0,
  }, 'the batch whose session died left nothing: only the lead committed before it is there');
});
