// The TypeScript client's upload URLs (clients/typescript): createUploadUrl with the team key,
// uploadToUrl with none, against the real service; both retried with their Idempotency-Key after a lost answer.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { MediaApiError, MediaClient, uploadToUrl } from '../../clients/typescript/src/index.ts';
import { holdTeamCommits } from '../helpers/commit-hold.ts';
import { connectPg } from '../helpers/database.ts';
import { startTestServer } from '../helpers/server.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { pngLike, teamStorageState } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';

const server = await startTestServer(t);
const db = await connectPg(server.databaseUrl);
t.teardown(() => db.end());
const team = await server.createTeam('ClientUrls');
const client = new MediaClient({ baseUrl: server.baseUrl, teamId: team.teamId, apiKey: team.key });

async function expectApiError(t: Test, promise: Promise<unknown>, status: number, messageKey: string): Promise<void> {
  try {
    await promise;
    t.fail(`expected ${status} ${messageKey}`);
  } catch (error) {
    t.ok(error instanceof MediaApiError, 'a MediaApiError');
    t.match(error, { status, messageKey }, `${status} ${messageKey}`);
  }
}

t.test('createUploadUrl, then uploadToUrl from a path without a key; the URL works once', async (t) => {
  const created = await client.createUploadUrl({ tags: ['player:7'], folder: 'screens', maxSizeBytes: 2_000_000, contentTypes: ['image/*'], expiresInSeconds: 300 });
  t.match(created, { method: 'POST', fields: { name: 'file' }, maxSizeBytes: 2_000_000, url: String, expiresAt: String });
  const dir = await mkdtemp(join(tmpdir(), 'media-client-urls-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const content = pngLike(300_000);
  const path = join(dir, 'shot 1.png');
  await writeFile(path, content);
  let lastProgress = 0;
  const uploaded = await uploadToUrl(created.url, path, { contentType: 'image/png', onProgress: (sent) => (lastProgress = sent) });
  t.match(uploaded, { fileName: 'shot 1.png', size: content.length, tags: ['player:7'], contentType: 'image/png' });
  t.ok(lastProgress >= content.length, 'progress reported');
  t.equal((await client.listMedia()).media.length, 1, 'listed for the team');
  await expectApiError(t, uploadToUrl(created, pngLike(100), { name: 'again.png' }), 410, 'error.media.uploadUrlUsed');
});

t.test('uploadToUrl from a buffer; its refusals are MediaApiError objects and store nothing', async (t) => {
  const created = await client.createUploadUrl({ maxSizeBytes: 1000, fileName: 'fixed.png' });
  const before = await teamStorageState(server.databaseUrl, team.teamId);
  await expectApiError(t, uploadToUrl(created, pngLike(5000), { name: 'big.png' }), 413, 'error.payloadTooLarge');
  await expectApiError(t, uploadToUrl(created.url.replace(/signature=(.)/, (_, first: string) => `signature=${first === 'A' ? 'B' : 'A'}`), pngLike(10), { name: 'x.png' }), 403, 'error.media.uploadUrlInvalid');
  t.same(await teamStorageState(server.databaseUrl, team.teamId), before, 'nothing stored');
  const uploaded = await uploadToUrl(created, pngLike(900), { name: 'mine.png' });
  t.equal(uploaded.fileName, 'fixed.png', 'the URL\'s name wins');
  await expectApiError(t, client.createUploadUrl({ expiresInSeconds: 5 }), 400, 'error.badRequest');
});

/** Holds every insert of an upload URL (the test's own transaction locks the table), so a creation waits after its key was claimed. */
async function holdUrlCreations(databaseUrl: string) {
  const locker = await connectPg(databaseUrl);
  const observer = await connectPg(databaseUrl);
  await locker.query('begin');
  await locker.query('lock table upload_url in share mode');
  return {
    waiting: async () =>
      (await observer.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query ~ '(insert into|delete from) upload_url'`,
      )).rows[0]!.n > 0,
    release: async () => {
      await locker.query('commit');
      await Promise.all([locker.end(), observer.end()]);
    },
  };
}

t.test('createUploadUrl whose answer was lost is retried with its key: the same URL, one row', async (t) => {
  const lost = await server.createTeam('ClientUrlLost');
  const proxy = await startTcpProxy(server.app.port);
  t.teardown(() => proxy.close());
  const viaProxy = new MediaClient({ baseUrl: `http://${proxy.address}`, teamId: lost.teamId, apiKey: lost.key, retry: { attempts: 8, baseDelayMs: 100 } });
  const conflicts = () => server.app.services.metrics.idempotencyConflicts.get().then((metric) => metric.values.reduce((sum, value) => sum + value.value, 0));
  const conflictsBefore = await conflicts();

  const hold = await holdUrlCreations(server.databaseUrl);
  const creation = viaProxy.createUploadUrl({ folder: 'lost', expiresInSeconds: 600 });
  t.ok(await eventually(() => hold.waiting()), 'the service is storing the URL');
  proxy.cut(); // the connection dies: the first answer can never arrive
  t.ok(await eventually(async () => (await conflicts()) > conflictsBefore), 'the retry found the first attempt still running (409)');
  await hold.release();

  const created = await creation;
  const { rows } = await db.query<{ id: string }>('select id from upload_url where team_id = $1', [lost.teamId]);
  t.equal(rows.length, 1, 'one URL made');
  t.equal(new URL(created.url).pathname.split('/').pop(), rows[0]!.id, 'and the retry answers it');
  t.equal((await uploadToUrl(created, pngLike(500), { name: 'l.png' })).fileName, 'l.png', 'the URL works');
});

t.test('uploadToUrl whose answer was lost is retried with its key: the first file, not 410 used', async (t) => {
  const lost = await server.createTeam('ClientUseLost');
  const owner = new MediaClient({ baseUrl: server.baseUrl, teamId: lost.teamId, apiKey: lost.key });
  const created = await owner.createUploadUrl({ fileName: 'lost.png' });
  const proxy = await startTcpProxy(server.app.port);
  t.teardown(() => proxy.close());
  const viaProxy = created.url.replace(server.baseUrl, `http://${proxy.address}`);
  const content = pngLike(20_000);

  const hold = await holdTeamCommits(server.databaseUrl, lost.teamId);
  const upload = uploadToUrl(viaProxy, content, { retry: { attempts: 8, baseDelayMs: 100 } });
  t.ok(await eventually(() => hold.waiting()), 'the service is committing the upload');
  proxy.cut();
  await hold.release();

  const uploaded = await upload;
  const listed = await owner.listMedia();
  t.equal(listed.totalCount, 1, 'stored once');
  t.equal(uploaded.id, listed.media[0]!.id, 'the retry answers the first attempt\'s file');
  t.equal((await teamStorageState(server.databaseUrl, lost.teamId)).usedStorage, content.length, 'counted once');
  await expectApiError(t, uploadToUrl(created, content, { name: 'again.png' }), 410, 'error.media.uploadUrlUsed');
});
