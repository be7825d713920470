import t from 'tap';
import type { Test } from 'tap';
import { connectPg } from '../helpers/database.ts';
import { startTestServer, type CreatedTeam, type TestServer } from '../helpers/server.ts';
import { driverSettings, settledObjects, storedObjects } from '../helpers/storage.ts';
import { teamStorageState, uploadMultipart } from '../helpers/uploads.ts';

const DAY = 86_400_000;
const HOUR = 3_600_000;
/** Sweep runs use hours far from the real clock, so the service's own hourly timer never claims them. */
const BASE = Date.UTC(2100, 0, 1, 0, 30);
const at = (hour: number) => new Date(BASE + hour * HOUR);

const settings = { ...driverSettings('fs'), RATE_LIMIT_POINTS: 100_000 };
const server = await startTestServer(t, { settings });
// Only the runs of this test: the timer would otherwise sweep at a real hour boundary.
await server.app.services.folderSweeper.stop();
const team = await server.createTeam('SweepTeam');
const other = await server.createTeam('OtherSweepTeam');

async function folder(owner: CreatedTeam, body: Record<string, unknown>): Promise<string> {
  const response = await server.media('POST', `/v1/cdn/media/${owner.teamId}/folders`, owner.key, { body });
  if (response.status !== 201) throw new Error(`folder creation failed: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body.id;
}

async function rules(owner: CreatedTeam, folderId: string, body: Record<string, unknown>): Promise<void> {
  const response = await server.media('PATCH', `/v1/cdn/media/${owner.teamId}/folders/${folderId}`, owner.key, { body });
  if (response.status !== 200) throw new Error(`folder update failed: ${response.status} ${JSON.stringify(response.body)}`);
}

/** Uploads a file (into the folder, if any) and sets its created_at to `createdAt`. */
async function upload(owner: CreatedTeam, folderId: string | null, fileName: string, createdAt: Date): Promise<string> {
  const response = await uploadMultipart(
    server,
    owner.teamId,
    owner.key,
    { content: Buffer.from(`content of ${fileName} ${'x'.repeat(fileName.length * 7)}`), fileName, contentType: 'text/plain' },
    folderId ? `folderId=${folderId}` : '',
  );
  if (response.status !== 201) throw new Error(`upload failed: ${response.status} ${JSON.stringify(response.body)}`);
  await sql('update media_file set created_at = $1 where id = $2', [createdAt, response.body.id]);
  return response.body.id;
}

async function sql<T = any>(text: string, params: unknown[] = [], target: TestServer = server): Promise<T[]> {
  const client = await connectPg(target.databaseUrl);
  try {
    return (await client.query(text, params)).rows as T[];
  } finally {
    await client.end();
  }
}

async function remaining(ids: string[]): Promise<Set<string>> {
  const rows = await sql<{ id: string }>('select id from media_file where id = any($1::uuid[])', [ids]);
  return new Set(rows.map((row) => row.id));
}

async function expectStorageConsistent(t: Test, owner: CreatedTeam): Promise<void> {
  const state = await teamStorageState(server.databaseUrl, owner.teamId);
  t.equal(state.usedStorage, state.sumOfSizes, 'used storage equals the sum of the remaining files');
  const objects = await settledObjects('fs', server.dataDir, owner.teamId, state.files);
  t.equal(objects.objects.length, state.files, 'storage holds exactly the remaining files');
}

t.test('retentionDays deletes only old files directly in the folder', async (t) => {
  const now = at(0);
  const ago = (days: number) => new Date(now.getTime() - days * DAY);
  const logs = await folder(team, { name: 'Logs' });
  const sub = await folder(team, { name: 'Nested', parentId: logs });
  const plain = await folder(team, { name: 'Plain' });
  const theirs = await folder(other, { name: 'Logs' });

  const old = [await upload(team, logs, 'old1.txt', ago(10)), await upload(team, logs, 'old2.txt', ago(8))];
  const kept = [
    await upload(team, logs, 'recent.txt', ago(6)),
    await upload(team, logs, 'new.txt', now),
    await upload(team, sub, 'nested-old.txt', ago(30)),
    await upload(team, plain, 'plain-old.txt', ago(30)),
    await upload(team, null, 'root-old.txt', ago(30)),
    await upload(other, theirs, 'their-old.txt', ago(30)),
  ];
  await rules(team, logs, { retentionDays: 7 });
  const before = await storedObjects('fs', server.dataDir, team.teamId);

  const result = await server.app.services.folderSweeper.runOnce(now);
  t.same(result, { ran: true, deleted: 2 }, 'the run deletes the two old files');
  t.same([...(await remaining(old))], [], 'the old files in the folder are gone');
  t.same(await remaining(kept), new Set(kept), 'newer files, subfolder files, other folders, root files and other teams stay');
  await expectStorageConsistent(t, team);
  const after = await storedObjects('fs', server.dataDir, team.teamId);
  t.equal(after.objects.length, before.objects.length - 2, 'two objects removed from storage');
  const otherState = await teamStorageState(server.databaseUrl, other.teamId);
  t.equal(otherState.files, 1, 'the other team keeps its file');
  t.equal(otherState.usedStorage, otherState.sumOfSizes, 'the other team storage is untouched');

  const again = await server.app.services.folderSweeper.runOnce(new Date(now.getTime() + 20 * 60_000));
  t.same(again, { ran: false, deleted: 0 }, 'a second run in the same hour does not run');
  const claims = await sql<{ finished_at: Date | null }>("select finished_at from job_run where job = 'folder-rule-sweep' and slot = $1", [new Date(BASE - 30 * 60_000)]);
  t.equal(claims.length, 1, 'the hour is claimed once');
  t.ok(claims[0]?.finished_at, 'and marked finished');
});

t.test('maxFiles keeps the newest N files, ties broken by id', async (t) => {
  const now = at(1);
  const box = await folder(team, { name: 'Inbox' });
  const child = await folder(team, { name: 'Child', parentId: box });
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) ids.push(await upload(team, box, `f${i}.txt`, new Date(now.getTime() - (10 - i) * HOUR)));
  // Two files with the same created_at as the newest: the larger id counts as newer.
  const tie = await upload(team, box, 'tie.txt', new Date(now.getTime() - 5 * HOUR));
  const childFiles = [await upload(team, child, 'c1.txt', new Date(now.getTime() - 50 * DAY)), await upload(team, child, 'c2.txt', new Date(now.getTime() - 49 * DAY))];
  await rules(team, box, { maxFiles: 2 });
  const tied = [ids[5]!, tie].sort();

  const result = await server.app.services.folderSweeper.runOnce(now);
  t.same(result, { ran: true, deleted: 5 }, 'five of seven files are deleted');
  t.same(await remaining([...ids, tie]), new Set(tied), 'the two newest files stay');
  t.same(await remaining(childFiles), new Set(childFiles), 'files of the subfolder stay');
  await expectStorageConsistent(t, team);

  await rules(team, box, { maxFiles: 1 });
  const next = await server.app.services.folderSweeper.runOnce(at(2));
  t.same(next, { ran: true, deleted: 1 }, 'the next hour applies the changed rule');
  t.same(await remaining(tied), new Set([tied[1]]), 'the larger id of the tie is the newest');
  await expectStorageConsistent(t, team);
});

t.test('batches: more files than one batch are all swept', async (t) => {
  const now = at(3);
  const many = await folder(team, { name: 'Many' });
  const ids: string[] = [];
  for (let i = 0; i < 12; i++) ids.push(await upload(team, many, `m${i}.txt`, new Date(now.getTime() - 40 * DAY + i * HOUR)));
  await rules(team, many, { retentionDays: 30, maxFiles: 100 });
  const { FolderRuleSweeper } = await import('../../src/domain/folders/folder-rule-sweep.ts');
  const logged: unknown[] = [];
  const deletedBatches: string[][] = [];
  const edits = {
    deleteMany: async (teamId: string, mediaIds: string[]) => {
      deletedBatches.push(mediaIds);
      return editsOf(server).deleteMany(teamId, mediaIds);
    },
  };
  const sweeper = new FolderRuleSweeper({
    orm: server.app.services.orm,
    edits,
    logger: { info: (object: unknown) => void logged.push(object), error: () => undefined },
    batchSize: 5,
  });
  const result = await sweeper.runOnce(now);
  t.same(result, { ran: true, deleted: 12 }, 'all twelve old files are deleted');
  t.same(deletedBatches.map((batch) => batch.length), [5, 5, 2], 'in batches of at most five');
  t.same(await remaining(ids), new Set(), 'none is left');
  t.match(logged.filter((line) => (line as { rule?: string }).rule), [{ teamId: team.teamId, folderId: many, rule: 'retentionDays', deleted: 12 }], 'the deletions are logged per folder and rule');
  await expectStorageConsistent(t, team);
});

t.test('two instances sharing a database: one run per hour', async (t) => {
  // Shared database and shared files, as instances of one deployment have.
  const second = await startTestServer(t, { settings, databaseUrl: server.databaseUrl, dataDir: server.dataDir });
  await second.app.services.folderSweeper.stop();
  const shared = await folder(team, { name: 'Shared' });
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push(await upload(team, shared, `s${i}.txt`, new Date(at(4).getTime() - 60 * DAY)));
  await rules(team, shared, { retentionDays: 1 });

  for (let hour = 4; hour < 8; hour++) {
    const results = await Promise.all([server.app.services.folderSweeper.runOnce(at(hour)), second.app.services.folderSweeper.runOnce(at(hour))]);
    t.equal(results.filter((result) => result.ran).length, 1, `hour ${hour}: exactly one instance runs`);
  }
  t.same(await remaining(ids), new Set(), 'the files are deleted');
  const claims = await sql<{ count: string }>("select count(*) from job_run where job = 'folder-rule-sweep' and slot >= $1 and slot < $2", [at(3.5), at(7.5)]);
  t.equal(Number(claims[0]?.count), 4, 'one claim per hour');
  await expectStorageConsistent(t, team);
});

/** The sweeper's own deleteMany path, for the batch test's spy. */
function editsOf(target: TestServer) {
  return (target.app.services.folderSweeper as unknown as { edits: { deleteMany(teamId: string, ids: string[]): Promise<string[]> } }).edits;
}

t.test('start() fires after the interval boundary, logs failures without throwing, and stop() ends it', async (t) => {
  const { FolderRuleSweeper } = await import('../../src/domain/folders/folder-rule-sweep.ts');
  const infos: unknown[] = [];
  const errors: unknown[] = [];
  const failing = await folder(team, { name: 'Failing' });
  await upload(team, failing, 'doomed.txt', new Date(Date.now() - 90 * DAY));
  await rules(team, failing, { retentionDays: 1 });
  const sweeper = new FolderRuleSweeper({
    orm: server.app.services.orm,
    edits: {
      deleteMany: async () => {
        throw new Error('storage down');
      },
    },
    logger: { info: (object: unknown) => void infos.push(object), error: (object: unknown) => void errors.push(object) },
  });
  sweeper.start(200);
  for (let i = 0; i < 50 && errors.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
  await sweeper.stop();
  t.match(errors[0], { err: { message: 'storage down' }, job: 'folder-rule-sweep' }, 'the failure is logged, not thrown');
  const claims = await sql("select 1 from job_run where job = 'folder-rule-sweep' and slot = date_trunc('hour', now())");
  t.equal(claims.length, 1, 'the timer run claimed the current hour');
  const count = errors.length;
  await new Promise((resolve) => setTimeout(resolve, 600));
  t.equal(errors.length, count, 'nothing runs after stop()');
});
