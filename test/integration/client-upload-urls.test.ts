// The TypeScript client's upload URLs (clients/typescript): createUploadUrl with the team key,
// uploadToUrl with none, against the real service.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { MediaApiError, MediaClient, uploadToUrl } from '../../clients/typescript/src/index.ts';
import { startTestServer } from '../helpers/server.ts';
import { pngLike, teamStorageState } from '../helpers/uploads.ts';

const server = await startTestServer(t);
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
  await expectApiError(t, uploadToUrl(created.url.replace(/signature=./, 'signature=_'), pngLike(10), { name: 'x.png' }), 403, 'error.media.uploadUrlInvalid');
  t.same(await teamStorageState(server.databaseUrl, team.teamId), before, 'nothing stored');
  const uploaded = await uploadToUrl(created, pngLike(900), { name: 'mine.png' });
  t.equal(uploaded.fileName, 'fixed.png', 'the URL\'s name wins');
  await expectApiError(t, client.createUploadUrl({ expiresInSeconds: 5 }), 400, 'error.badRequest');
});
