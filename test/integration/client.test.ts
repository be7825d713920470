// The TypeScript client (clients/typescript) against the real service: every media route, streamed
// uploads from a path, a buffer and a stream, the spec's error body as MediaApiError, and retries of
// 503 uploadBusy, 429 and connection failures.
import { createServer, connect, type Socket } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import t, { type Test } from 'tap';
import { MediaApiError, MediaClient, MediaConnectionError } from '../../clients/typescript/src/index.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { holdTeamCommits } from '../helpers/commit-hold.ts';
import { heldUpload, MiB, pngLike, teamStorageState } from '../helpers/uploads.ts';
import { eventually, sleep } from '../helpers/wait.ts';

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'media-client-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function clientFor(server: { baseUrl: string }, team: { teamId: string; key: string }, retry = {}) {
  return new MediaClient({ baseUrl: server.baseUrl, teamId: team.teamId, apiKey: team.key, retry: { baseDelayMs: 50, ...retry } });
}

async function download(client: MediaClient, path: string): Promise<Buffer> {
  const file = path.slice(path.lastIndexOf('/') + 1);
  const response = await client.getFile(file);
  const chunks: Buffer[] = [];
  for await (const chunk of response.body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function expectApiError(t: Test, promise: Promise<unknown>, status: number, messageKey: string): Promise<MediaApiError | undefined> {
  try {
    await promise;
    t.fail(`expected ${status} ${messageKey}`);
    return undefined;
  } catch (error) {
    t.ok(error instanceof MediaApiError, 'a MediaApiError');
    const apiError = error as MediaApiError;
    t.match(apiError, { status, messageKey, message: String, name: String }, `${status} ${messageKey}`);
    t.equal(apiError.body.messageKey, messageKey, 'with the spec\'s body');
    return apiError;
  }
}

t.test('uploads from a path, a buffer and a stream, and the JSON route, land with their content', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('ClientUploads');
  const client = clientFor(server, team);
  const dir = await tempDir(t);

  const big = pngLike(3 * MiB + 17);
  const path = join(dir, 'screenshot one.png');
  await writeFile(path, big);
  const progress: Array<[number, number | undefined]> = [];
  const fromPath = await client.upload(path, { tags: 'client,path', onProgress: (sent, total) => progress.push([sent, total]) });
  t.equal(fromPath.fileName, 'screenshot one.png', 'named after the path');
  t.equal(fromPath.size, big.length);
  t.same(fromPath.tags.sort(), ['client', 'path']);
  t.equal(fromPath.public, true, 'multipart default: public');
  const last = progress.at(-1)!;
  t.ok(last[1]! > big.length && last[0] === last[1], 'progress reaches the whole body (file plus framing)');
  t.ok(progress.length > 2, 'progress reported while writing');
  t.ok((await download(client, fromPath.path)).equals(big), 'the stored file is the file');

  const small = pngLike(2048);
  const fromBuffer = await client.upload(small, { name: 'ünïcode "quoted".png', public: false, folder: 'shots/2026' });
  t.equal(fromBuffer.fileName, 'ünïcode "quoted".png', 'the exact name, whatever the part header could carry');
  t.equal(fromBuffer.public, false);
  t.ok(fromBuffer.folderId, 'in the folder made from the path');

  const streamed = pngLike(512 * 1024);
  const fromStream = await client.upload(
    { stream: Readable.from([streamed.subarray(0, 1000), streamed.subarray(1000)]), size: streamed.length },
    { name: 'streamed.png' },
  );
  t.equal(fromStream.size, streamed.length);
  t.ok((await download(client, fromStream.path)).equals(streamed));

  const unsized = await client.upload({ stream: Readable.from([Buffer.from('hello '), Buffer.from('world')]) }, { name: 'chunked.txt' });
  t.equal(unsized.size, 11, 'a stream of unknown size is sent chunked');

  const json = await client.uploadJson({ content: Buffer.from('small text'), fileName: 'note.txt', tags: ['json'] });
  t.equal(json.public, false, 'JSON default: private');
  t.equal(json.size, 10);
  const link = await client.getMediaLink(json.id);
  t.match(link.url, /signature=/, 'a private file\'s link is signed');
  const url = new URL(link.url);
  const file = url.pathname.slice(url.pathname.lastIndexOf('/') + 1);
  const signed = await client.getFile(file, { expires: url.searchParams.get('expires')!, signature: url.searchParams.get('signature')! });
  let text = '';
  for await (const chunk of signed.body) text += chunk;
  t.equal(text, 'small text', 'the signed link serves it');

  const state = await teamStorageState(server.databaseUrl, team.teamId);
  t.equal(state.files, 5, 'each upload stored once');
  t.equal(state.usedStorage, state.sumOfSizes);
});

t.test('every other media route, typed', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('ClientRoutes');
  const client = clientFor(server, team);
  const a = await client.upload(pngLike(100), { name: 'alpha.png', tags: 'red' });
  const b = await client.upload(pngLike(100), { name: 'beta.png', tags: 'red,blue' });

  const folder = await client.createFolder({ name: 'Screens' });
  t.equal(folder.name, 'Screens');
  const renamed = await client.updateFolder(folder.id, { name: 'Screenshots' });
  t.equal(renamed.name, 'Screenshots');
  t.equal((await client.listFolders()).folders.length, 1);

  const updated = await client.updateMedia(a.id, { fileName: 'alpha2.png', folderId: folder.id, tags: ['green'] });
  t.match(updated, { fileName: 'alpha2.png', folderId: folder.id, tags: ['green'] });

  const page = await client.listMedia({ pageSize: 1, pageNumber: 2 });
  t.equal(page.totalCount, 2);
  t.equal(page.media.length, 1, 'paging headers sent');
  t.equal((await client.listMedia({ folderId: folder.id })).media[0]!.id, a.id, 'filters sent');
  t.equal((await client.listMedia({ search: 'beta' })).media[0]!.id, b.id);

  const tags = await client.listTags();
  t.same(tags.tags.map((tag) => tag.tag).sort(), ['blue', 'green', 'red']);
  const usage = await client.getUsage({ days: 3 });
  t.equal(usage.storage.usedBytes, a.size + b.size);

  const bulk = await client.bulk({ action: 'addTags', ids: [a.id, b.id], tags: ['both'] });
  t.equal(bulk.affected, 2);
  t.same(bulk.failed, []);

  t.equal((await client.deleteFolder(folder.id)).deleted, folder.id);
  const deleted = await client.deleteMedia(b.id);
  t.equal(deleted.deleted, b.id);
  t.equal(deleted.usedTeamStorage, a.size);
});

t.test('error answers are MediaApiError objects carrying the spec\'s body', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('ClientErrors');
  const client = clientFor(server, team);
  const missing = await expectApiError(t, client.getMediaLink('00000000-0000-4000-8000-000000000000'), 404, 'error.notFound');
  t.ok(missing?.requestId, 'with the answer\'s X-Request-Id');
  await expectApiError(t, client.upload(Buffer.from('MZ\x90\x00binary'), { name: 'tool.exe' }), 415, 'error.unsupportedMediaType');
  await expectApiError(t, client.createFolder({ name: '' }), 400, 'error.badRequest');
  const wrongKey = new MediaClient({ baseUrl: server.baseUrl, teamId: team.teamId, apiKey: 'tws_wrong' });
  await expectApiError(t, wrongKey.listMedia(), 401, 'error.unauthorized');
  t.equal((await teamStorageState(server.databaseUrl, team.teamId)).files, 0, 'nothing stored');
});

t.test('the Content-Length of a streamed upload lets the service refuse a too large file before its body', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('ClientEarly');
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxMediaFileSize: 1_000_000 });
  const dir = await tempDir(t);
  const path = join(dir, 'too-big.png');
  const size = 64 * MiB;
  await writeFile(path, pngLike(size));
  let sent = 0;
  await expectApiError(t, clientFor(server, team).upload(path, { onProgress: (bytes) => (sent = bytes) }), 402, 'error.teamLimits.maxMediaFileSize');
  t.ok(sent < size / 2, `refused after ${Math.round(sent / MiB)} of ${size / MiB} MiB were sent`);
  t.equal((await teamStorageState(server.databaseUrl, team.teamId)).files, 0);
});

t.test('an upload refused 503 uploadBusy is retried after Retry-After and lands once the slot frees', async (t) => {
  const server = await startTestServer(t, { settings: { UPLOAD_CONCURRENCY: 1, UPLOAD_QUEUE_LIMIT: 0, UPLOAD_RETRY_AFTER_SECONDS: 1 } });
  const team = await server.createTeam('ClientBusy');
  const gate = server.app.services.gate;
  const held = heldUpload(server, team.teamId, team.key, Buffer.alloc(64 * 1024, 3));
  t.ok(await eventually(() => gate.running === 1), 'the only slot is taken');

  const once = clientFor(server, team, { attempts: 1 });
  const busy = await expectApiError(t, once.upload(pngLike(1000), { name: 'busy.png' }), 503, 'error.media.uploadBusy');
  t.equal(busy?.retryAfter, 1, 'Retry-After carried on the error');

  const dir = await tempDir(t);
  const path = join(dir, 'retried.png');
  const content = pngLike(200 * 1024);
  await writeFile(path, content);
  let attempts = 0;
  const started = Date.now();
  const retried = clientFor(server, team, { attempts: 10 }).upload(path, {
    onProgress: (sent) => {
      if (sent === 0) attempts++;
    },
  });
  t.ok(await eventually(() => attempts >= 2), 'refused, then sent again');
  t.ok(Date.now() - started >= 900, 'not before Retry-After');
  held.finish();
  t.equal((await held.response).status, 201);
  const stored = await retried;
  t.ok(attempts >= 2, `landed after ${attempts} attempts`);
  t.ok((await download(once, stored.path)).equals(content), 'the retried upload stored the whole file');
  const state = await teamStorageState(server.databaseUrl, team.teamId);
  t.equal(state.files, 2, 'the held upload and the retried one, each once');
  t.equal(state.usedStorage, state.sumOfSizes);

  const again = heldUpload(server, team.teamId, team.key, Buffer.alloc(1024, 3));
  t.ok(await eventually(() => gate.running === 1));
  await expectApiError(t, clientFor(server, team, { attempts: 5 }).upload({ stream: Readable.from([pngLike(1000)]), size: 1000 }, { name: 's.png' }), 503, 'error.media.uploadBusy');
  t.pass('a caller\'s stream is not retried once read');
  again.finish();
  await again.response;
});

t.test('a 429 is retried after Retry-After', async (t) => {
  const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 2, RATE_LIMIT_DURATION_SECONDS: 1 } });
  const team = await server.createTeam('ClientRate');
  const once = clientFor(server, team, { attempts: 1 });
  await once.listMedia();
  await once.listMedia();
  const limited = await expectApiError(t, once.listMedia(), 429, 'error.tooManyRequests');
  t.ok((limited?.retryAfter ?? 0) >= 1, 'Retry-After carried on the error');
  const client = clientFor(server, team);
  const results = await Promise.all([1, 2, 3, 4, 5].map((n) => client.upload(pngLike(100), { name: `r${n}.png` })));
  t.equal(results.length, 5, 'every upload landed, waiting out the limit');
  t.equal((await teamStorageState(server.databaseUrl, team.teamId)).files, 5, 'each once');
});

t.test('connection failures: idempotent requests are retried, others are not', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('ClientConnections');
  const proxy = await startTcpProxy(server.app.port);
  t.teardown(() => proxy.close());
  const viaProxy = { baseUrl: `http://${proxy.address}` };

  proxy.cut();
  await proxy.refuse();
  const refused = clientFor(viaProxy, team, { attempts: 2 });
  await t.rejects(refused.listMedia(), MediaConnectionError, 'gives up after its attempts');
  const listing = clientFor(viaProxy, team, { attempts: 8, baseDelayMs: 100 }).listMedia();
  await sleep(250);
  await proxy.restore();
  t.equal((await listing).totalCount, 0, 'a GET retried until the service is reachable');

  const dir = await tempDir(t);
  const path = join(dir, 'cut.png');
  const content = pngLike(8 * MiB);
  await writeFile(path, content);
  let cuts = 0;
  let attempts = 0;
  const uploaded = await clientFor(viaProxy, team, { attempts: 4 }).upload(path, {
    onProgress: (sent) => {
      if (sent === 0) attempts++;
      if (cuts === 0 && sent > MiB) {
        cuts++;
        proxy.cut(); // the connection dies half-way through the body
      }
    },
  });
  // A second attempt may still find the first one's Idempotency-Key claimed (the service has not yet
  // seen the cut connection): it answers 409 idempotencyInFlight, which the client retries too.
  t.ok(attempts >= 2 && attempts <= 4, `an upload from a path is sent again after a connection failure (${attempts} attempts)`);
  t.ok((await download(clientFor(server, team), uploaded.path)).equals(content), 'and lands whole');
  t.equal((await teamStorageState(server.databaseUrl, team.teamId)).files, 1, 'once');

  proxy.cut(); // no kept-alive connection to reuse
  await proxy.refuse();
  await t.rejects(clientFor(viaProxy, team, { attempts: 5 }).createFolder({ name: 'x' }), MediaConnectionError, 'a POST that is not an upload is not retried');
  await proxy.restore();
});

t.test('an upload whose answer was lost is retried with its key: the service replays it, one file', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('ClientLostAnswer');
  const proxy = await startTcpProxy(server.app.port);
  t.teardown(() => proxy.close());
  const content = pngLike(20_000);

  const hold = await holdTeamCommits(server.databaseUrl, team.teamId);
  const upload = clientFor({ baseUrl: `http://${proxy.address}` }, team, { attempts: 6 }).upload(content, { name: 'lost.png' });
  t.ok(await eventually(() => hold.waiting()), 'the service is committing the upload');
  proxy.cut(); // the connection dies: the first answer can never arrive
  const inFlight = () => server.app.services.metrics.idempotencyConflicts.get().then((metric) => metric.values.reduce((sum, value) => sum + value.value, 0));
  t.ok(await eventually(async () => (await inFlight()) >= 1), 'the retry found the first attempt still running (409)');
  await hold.release();

  const uploaded = await upload;
  const listed = await clientFor(server, team).listMedia();
  t.equal(listed.totalCount, 1, 'stored once');
  t.equal(uploaded.id, listed.media[0]!.id, 'the retry answers the first attempt\'s file');
  t.equal((await teamStorageState(server.databaseUrl, team.teamId)).usedStorage, content.length, 'counted once');
});

t.test('every attempt of an upload carries the same Idempotency-Key; each upload its own', async (t) => {
  const server = await startTestServer(t, { settings: { UPLOAD_CONCURRENCY: 1, UPLOAD_QUEUE_LIMIT: 0, UPLOAD_RETRY_AFTER_SECONDS: 1 } });
  const team = await server.createTeam('ClientKeys');
  const relay = await recordingRelay(t, server);
  const client = clientFor({ baseUrl: relay.baseUrl }, team, { attempts: 10 });

  const held = heldUpload(server, team.teamId, team.key, Buffer.alloc(1024, 3));
  t.ok(await eventually(() => server.app.services.gate.running === 1));
  const retried = client.upload(pngLike(1000), { name: 'k.png' });
  t.ok(await eventually(() => idempotencyKeys(relay.text()).length >= 2), 'sent at least twice');
  held.finish();
  await held.response;
  await retried;
  await client.upload(pngLike(1000), { name: 'k2.png' });
  await client.uploadJson({ content: Buffer.from('x'), fileName: 'k3.txt', idempotencyKey: 'caller-chosen-key' });

  const keys = idempotencyKeys(relay.text());
  const [first, ...rest] = keys;
  const retries = rest.slice(0, keys.length - 3);
  t.ok(retries.length >= 1 && retries.every((key) => key === first), 'the retries reuse the first attempt\'s key');
  t.match(first, /^[0-9a-f-]{36}$/, 'a random UUID');
  t.not(keys.at(-2), first, 'the next upload has its own key');
  t.equal(keys.at(-1), 'caller-chosen-key', 'or the caller\'s');
});

function idempotencyKeys(text: string): string[] {
  return [...text.matchAll(/^idempotency-key: (.+)\r$/gim)].map((match) => match[1]!);
}

/** A TCP relay to the real service that keeps what clients sent, to read the request headers. */
async function recordingRelay(t: Test, server: TestServer): Promise<{ baseUrl: string; text(): string }> {
  const chunks: Buffer[] = [];
  const sockets = new Set<Socket>();
  const relay = createServer((client) => {
    const backend = connect({ host: '127.0.0.1', port: server.app.port });
    for (const socket of [client, backend]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    }
    client.on('data', (chunk: Buffer) => chunks.push(chunk));
    client.pipe(backend);
    backend.pipe(client);
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const socket of sockets) socket.destroy();
    relay.close();
  });
  return { baseUrl: `http://127.0.0.1:${(relay.address() as { port: number }).port}`, text: () => Buffer.concat(chunks).toString('latin1') };
}

t.test('upload with deletionUrl: true answers a deletion link, which deletes the file once', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('ClientDeletionLink');
  const client = clientFor(server, team);
  const plain = await client.upload(pngLike(1000), { name: 'kept.png' });
  t.equal(plain.deletionUrl, undefined, 'not asked: none');
  const stored = await client.upload(pngLike(2000), { name: 'gone.png', deletionUrl: true });
  t.match(stored.deletionUrl, new RegExp(`/v1/cdn/media/${team.teamId}/deletion-links/${stored.id}\\?signature=`), 'asked: the link');
  const deleted = await fetch(stored.deletionUrl!, { method: 'DELETE' });
  t.equal(deleted.status, 200);
  t.same(await deleted.json(), { deleted: stored.id, usedTeamStorage: 1000 }, 'its storage freed');
  t.same((await client.listMedia()).media.map((file) => file.id), [plain.id], 'the other file stays');
  t.equal((await fetch(stored.deletionUrl!, { method: 'DELETE' })).status, 410, 'once');
});
