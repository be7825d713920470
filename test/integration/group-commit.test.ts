import t, { type Test } from 'tap';
import { randomUUID } from 'node:crypto';
import { GroupCommit, type UploadCommitRecord } from '../../src/uploads/commit/group-commit.ts';
import { connectPg, type PgClient } from '../helpers/database.ts';
import { subscribeToUploads } from '../helpers/outbox.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { driverSettings, settledObjects } from '../helpers/storage.ts';
import { KiB, pngLike, teamStorageState, uploadJson } from '../helpers/uploads.ts';
import { eventually, sleep } from '../helpers/wait.ts';

// Group commit (issue 18.3): uploads of one team that finish together are committed in one
// statement; each still gets the answer it would have got alone.

// No thumbnails: the test tells commits apart by the rows' xmin, which a thumbnail's update would change.
const settings = { ...driverSettings('fs'), RATE_LIMIT_POINTS: 100_000, THUMBNAIL_CONCURRENCY: 0 };
const first = await startTestServer(t, { settings });
const second = await startTestServer(t, { settings, databaseUrl: first.databaseUrl, dataDir: first.dataDir });
const db = await connectPg(first.databaseUrl);
t.teardown(() => db.end());

function upload(server: TestServer, team: { teamId: string; key: string }, size: number, name: string, extra: Record<string, unknown> = {}) {
  return uploadJson(server, team.teamId, team.key, { file: pngLike(size).toString('base64'), fileName: name, tags: ['burst'], ...extra });
}

async function createTeam(name: string, storageKiB: number | null) {
  const team = await first.createTeam(name, 'enterprise');
  const limits = await first.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxTeamStorage: storageKiB });
  if (limits.status !== 200) throw new Error(`limits: ${JSON.stringify(limits.body)}`);
  await subscribeToUploads(first.databaseUrl, team.teamId); // its uploads write outbox rows, counted by teamRecords
  return team;
}

/** Everything the team's committed uploads wrote, counted per table. */
async function teamRecords(teamId: string) {
  const query = async (sql: string) => Number((await db.query<{ n: string }>(sql, [teamId])).rows[0]?.n ?? 0);
  return {
    files: await query('select count(*) as n from media_file where team_id = $1'),
    events: await query(`select count(*) as n from media_event where team_id = $1 and kind = 'media.uploaded'`),
    usage: await query('select coalesce(sum(uploads), 0) as n from media_usage_daily where team_id = $1'),
    usageBytes: await query('select coalesce(sum(upload_bytes), 0) as n from media_usage_daily where team_id = $1'),
    tagCount: await query(`select coalesce(sum(count), 0) as n from media_tag_count where team_id = $1 and tag = 'burst'`),
    transactions: await query('select count(distinct xmin::text) as n from media_file where team_id = $1'),
  };
}

/** Holds the team row as a concurrent commit would, until the returned function is called. */
async function holdTeamRow(databaseUrl: string, teamId: string): Promise<{ client: PgClient; release(): Promise<void> }> {
  const client = await connectPg(databaseUrl);
  await client.query('begin');
  await client.query('select 1 from team where id = $1 for no key update', [teamId]);
  return {
    client,
    release: async () => {
      await client.query('commit');
      await client.end();
    },
  };
}

/** Resolves once a batch commit of the service waits for a row lock. */
async function batchWaitingForLock(): Promise<boolean> {
  return eventually(async () => {
    const rows = await db.query(`select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like '%media_commit_uploads%'`);
    return rows.rowCount! > 0;
  });
}

/** The storage limit was applied as if the uploads had come one by one: none refused would have fit after the last one committed. */
function checkGreedy(t: Test, limitBytes: number, sizes: number[], statuses: number[], used: number) {
  t.ok(used <= limitBytes, 'the limit holds');
  const refused = sizes.filter((_, i) => statuses[i] === 402);
  t.ok(refused.every((size) => used + size > limitBytes), 'every refused upload was refused because it did not fit');
}


t.test('a burst into a team with room for only some of it: exactly those that fit are stored and counted', async (t) => {
  const team = await createTeam('Burst', 200);
  const limitBytes = 200 * KiB;
  // Mixed sizes, so that a large upload refused does not stop a later small one.
  const sizes = Array.from({ length: 40 }, (_, i) => (i % 3 === 0 ? 20 * KiB : 6 * KiB + i));
  const responses = await Promise.all(sizes.map((size, i) => upload(first, team, size, `b${i}.png`)));
  const statuses = responses.map((response) => response.status);
  t.same([...new Set(statuses)].sort(), [201, 402], 'some landed, the rest got 402');
  for (const response of responses.filter((r) => r.status === 402)) t.equal(response.body.messageKey, 'error.teamLimits.maxTeamStorage');
  const landed = responses.filter((response) => response.status === 201);
  const state = await teamStorageState(first.databaseUrl, team.teamId);
  t.equal(state.files, landed.length, 'one row per 201');
  t.equal(state.usedStorage, state.sumOfSizes, 'the counter equals the sum of the stored files');
  t.equal(state.sumOfSizes, landed.reduce((sum, response) => sum + response.body.size, 0), 'the stored files are the answered ones');
  t.equal(state.reservedStorage, 0);
  checkGreedy(t, limitBytes, sizes, statuses, state.usedStorage);
  const records = await teamRecords(team.teamId);
  t.equal(records.events, landed.length, 'one outbox event per stored file');
  t.equal(records.usage, landed.length, 'usage counts the stored files');
  t.equal(records.usageBytes, state.sumOfSizes);
  t.equal(records.tagCount, landed.length, 'the tag count counts the stored files');
  t.equal((await settledObjects('fs', first.dataDir, team.teamId, landed.length)).objects.length, landed.length, 'only the stored files are kept');
  // Each 201 names the used storage right after its own commit: all distinct, the largest is the counter.
  const used = landed.map((response) => response.body.usedTeamStorage as number);
  t.equal(new Set(used).size, landed.length);
  t.equal(Math.max(...used), state.usedStorage);
});

t.test('uploads that finish while a batch holds the team row are committed together, each with its own answer', async (t) => {
  const team = await createTeam('Together', null);
  const held = await holdTeamRow(first.databaseUrl, team.teamId);
  const lead = upload(first, team, 3000, 'lead.png');
  t.ok(await batchWaitingForLock(), 'the first upload commits alone and waits for the row');
  const followers = Array.from({ length: 12 }, (_, i) => upload(first, team, 1000 + i, `f${i}.png`));
  await sleep(1000); // the followers finish streaming and queue behind the batch in flight
  await held.release();
  const responses = await Promise.all([lead, ...followers]);
  t.same(responses.map((response) => response.status), Array(13).fill(201));
  const records = await teamRecords(team.teamId);
  t.equal(records.files, 13);
  t.equal(records.transactions, 2, 'two transactions: the lead, then the twelve that waited');
  const state = await teamStorageState(first.databaseUrl, team.teamId);
  t.equal(state.usedStorage, state.sumOfSizes);
  t.equal(Math.max(...responses.map((response) => response.body.usedTeamStorage as number)), state.usedStorage);
});

t.test('a burst across two instances never passes the limit and counts exactly what is stored', async (t) => {
  const team = await createTeam('BurstTwo', 150);
  const limitBytes = 150 * KiB;
  const sizes = Array.from({ length: 48 }, (_, i) => (i % 4 === 0 ? 16 * KiB : 5 * KiB + i));
  const responses = await Promise.all(sizes.map((size, i) => upload(i % 2 === 0 ? first : second, team, size, `t${i}.png`)));
  const statuses = responses.map((response) => response.status);
  t.ok(statuses.every((status) => status === 201 || status === 402), 'each landed or got 402');
  t.ok(statuses.includes(402) && statuses.includes(201));
  const landed = responses.filter((response) => response.status === 201).length;
  const state = await teamStorageState(first.databaseUrl, team.teamId);
  t.equal(state.files, landed);
  t.equal(state.usedStorage, state.sumOfSizes, 'the counter equals the sum of the stored files');
  t.equal(state.reservedStorage, 0);
  checkGreedy(t, limitBytes, sizes, statuses, state.usedStorage);
  const records = await teamRecords(team.teamId);
  t.equal(records.events, landed);
  t.equal(records.tagCount, landed);
});

t.test('a batch in which one upload targets a folder deleted meanwhile fails only that upload', async (t) => {
  const team = await createTeam('FolderGone', null);
  const folder = await first.media('POST', `/v1/cdn/media/${team.teamId}/folders`, team.key, { body: { name: 'doomed' } });
  t.equal(folder.status, 201, JSON.stringify(folder.body));
  const folderId: string = folder.body.id;
  const held = await holdTeamRow(first.databaseUrl, team.teamId);
  const lead = upload(first, team, 2000, 'lead.png');
  t.ok(await batchWaitingForLock());
  const others = Array.from({ length: 6 }, (_, i) => upload(first, team, 1500 + i, `o${i}.png`));
  const doomed = upload(first, team, 1800, 'doomed.png', { folderId });
  await sleep(1000); // all of them resolved their folder and wait in the next batch
  const deleted = await second.media('DELETE', `/v1/cdn/media/${team.teamId}/folders/${folderId}`, team.key);
  t.equal(deleted.status, 200, JSON.stringify(deleted.body));
  await held.release();
  const [leadResponse, doomedResponse, ...otherResponses] = await Promise.all([lead, doomed, ...others]);
  t.equal(leadResponse!.status, 201);
  t.same(otherResponses.map((response) => response.status), Array(6).fill(201), 'the rest of the batch landed');
  t.equal(doomedResponse!.status, 404);
  t.equal(doomedResponse!.body.message, 'Could not find folder', JSON.stringify(doomedResponse!.body));
  t.equal(doomedResponse!.body.value, folderId);
  const state = await teamStorageState(first.databaseUrl, team.teamId);
  t.equal(state.files, 7);
  t.equal(state.usedStorage, state.sumOfSizes);
  const records = await teamRecords(team.teamId);
  t.equal(records.events, 7);
  t.equal(records.tagCount, 7);
  t.equal((await settledObjects('fs', first.dataDir, team.teamId, 7)).objects.length, 7, "the refused upload's file is removed");
});

t.test('a batch the database refuses as a whole is retried upload by upload, so only the culprit fails', async (t) => {
  const team = await createTeam('Culprit', null);
  const groupCommit = new GroupCommit({ orm: first.app.services.orm, maxBatch: 64 });
  const record = (name: string, contentType = 'image/png'): UploadCommitRecord => {
    const mediaId = randomUUID();
    return {
      mediaId, teamId: team.teamId, folderId: null, fileName: name, storageKey: `media/${team.teamId}/${mediaId}`, storageLocation: 'fs', size: 100, contentType,
      hash: null, isPublic: false, tags: ['burst'], uploadedByKeyId: null, createdAt: new Date(), eventId: randomUUID(), payload: { media: { id: mediaId } },
    };
  };
  // The first goes out alone at once; the next three wait for it and go out together.
  const lead = groupCommit.commit(record('lead.png'));
  const batch = [
    groupCommit.commit(record('a.png')),
    groupCommit.commit(record('bad.png', 'x'.repeat(300))), // longer than the column: the statement fails
    groupCommit.commit(record('b.png')),
  ];
  const outcomes = await Promise.allSettled([lead, ...batch]);
  t.same(outcomes.map((outcome) => outcome.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
  t.same(outcomes.filter((outcome) => outcome.status === 'fulfilled').map((outcome) => outcome.value.outcome), ['committed', 'committed', 'committed']);
  const records = await teamRecords(team.teamId);
  t.equal(records.files, 3);
  t.equal(records.events, 3);
  t.equal(records.tagCount, 3);
  const state = await teamStorageState(first.databaseUrl, team.teamId);
  t.equal(state.usedStorage, 300);
});
