// The TypeScript client's resumable (tus) uploads against the real service: a connection cut
// mid-upload is resumed by the client itself, an aborted upload resumes from its URL, and a
// refusal is a MediaApiError with the spec's body; a creation whose answer was lost is retried with
// its Idempotency-Key into the same upload.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { MediaApiError, MediaClient } from '../../clients/typescript/src/index.ts';
import { startTestServer } from '../helpers/server.ts';
import { connectPg } from '../helpers/database.ts';
import { cuttingProxy, firstAnswerLosingProxy, sha256 } from '../helpers/tus.ts';
import { MiB, teamStorageState } from '../helpers/uploads.ts';

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });

async function served(client: MediaClient, mediaId: string): Promise<Buffer> {
  const link = await client.getMediaLink(mediaId);
  return Buffer.from(await (await fetch(link.url)).arrayBuffer());
}

t.test('a file path uploaded resumably through a connection cut mid-upload lands whole', async (t) => {
  const team = await server.createTeam('ClientTus', 'enterprise');
  const dir = await mkdtemp(join(tmpdir(), 'client-tus-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const content = randomBytes(9 * MiB);
  await writeFile(join(dir, 'clip.mp4'), content);
  let cuts = 0;
  const proxy = await cuttingProxy(server.app.port, [3 * MiB], () => cuts++);
  t.teardown(() => proxy.close());
  const client = new MediaClient({ baseUrl: proxy.baseUrl, teamId: team.teamId, apiKey: team.key });
  const urls: string[] = [];
  const result = await client.resumableUpload(join(dir, 'clip.mp4'), {
    fileName: 'clip.mp4', fileType: 'video/mp4', tags: ['replay'], folder: 'clips', retryDelays: [50, 200, 500, 1000, 2000],
    onUploadUrl: (url) => urls.push(url),
  });
  t.equal(cuts, 1, 'the connection was cut mid-upload');
  t.equal(urls.length, 1, 'the upload URL is announced once');
  t.equal(result.uploadUrl, urls[0]);
  t.match(result.mediaId, /^[0-9a-f-]{36}$/);
  const direct = new MediaClient({ baseUrl: server.baseUrl, teamId: team.teamId, apiKey: team.key });
  t.equal(sha256(await served(direct, result.mediaId)), sha256(content), 'identical bytes');
  const listed = await direct.listMedia();
  t.match(listed.media, [{ id: result.mediaId, fileName: 'clip.mp4', tags: ['replay'], size: content.length }]);
  t.match(await teamStorageState(server.databaseUrl, team.teamId), { files: 1, usedStorage: content.length, reservedStorage: 0 });
});

t.test('an aborted upload resumes from its URL', async (t) => {
  const team = await server.createTeam('ClientTusAbort', 'enterprise');
  const content = randomBytes(6 * MiB);
  const client = new MediaClient({ baseUrl: server.baseUrl, teamId: team.teamId, apiKey: team.key });
  const controller = new AbortController();
  let url = '';
  const aborted = client.resumableUpload(content, {
    fileName: 'a.mp4', chunkSize: MiB,
    onUploadUrl: (announced) => {
      url = announced;
    },
    onProgress: (sent) => {
      if (sent >= 2 * MiB) controller.abort();
    },
    signal: controller.signal,
  });
  await t.rejects(aborted, { name: 'MediaConnectionError', code: 'ABORTED' });
  t.ok(url);
  const resumed = await client.resumableUpload(content, { fileName: 'a.mp4', uploadUrl: url });
  t.equal(resumed.uploadUrl, url, 'the same upload');
  t.equal(sha256(await served(client, resumed.mediaId)), sha256(content));
});

t.test('a refusal is a MediaApiError with the spec body', async (t) => {
  const team = await server.createTeam('ClientTusRefused');
  const client = new MediaClient({ baseUrl: server.baseUrl, teamId: team.teamId, apiKey: team.key });
  const error = await client.resumableUpload(Buffer.from('x'), { fileName: 'page.html', retryDelays: [] }).catch((caught: unknown) => caught);
  t.ok(error instanceof MediaApiError);
  t.match(error, { status: 415, messageKey: 'error.unsupportedMediaType' });
  const tooBig = await client.resumableUpload(Buffer.alloc(10_000_001), { fileName: 'big.mp4', retryDelays: [] }).catch((caught: unknown) => caught);
  t.match(tooBig, { status: 402, messageKey: 'error.teamLimits.maxMediaFileSize' });
});

t.test('a creation whose answer was lost is retried with its Idempotency-Key: one upload', async (t) => {
  const team = await server.createTeam('ClientTusLost');
  const proxy = await firstAnswerLosingProxy(server.app.port);
  t.teardown(() => proxy.close());
  const content = randomBytes(300_000);
  const client = new MediaClient({ baseUrl: proxy.baseUrl, teamId: team.teamId, apiKey: team.key });
  const result = await client.resumableUpload(content, { fileName: 'lost.bin', retryDelays: [50, 200, 500] });
  t.ok(proxy.lost, 'the creation\'s answer was lost');
  const pg = await connectPg(server.databaseUrl);
  t.teardown(() => pg.end());
  const { rows } = await pg.query('select id from tus_upload where team_id = $1', [team.teamId]);
  t.same(rows.map((row) => row.id), [result.mediaId], 'the retried creation got the first upload back');
  t.match(await teamStorageState(server.databaseUrl, team.teamId), { files: 1, usedStorage: content.length, reservedStorage: 0 }, 'nothing left reserved');
});
