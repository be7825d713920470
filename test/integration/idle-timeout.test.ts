import { readdir } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import t from 'tap';
import { startTestServer } from '../helpers/server.ts';
import { MiB, multipartBody, pngLike, teamStorageState, uploadMultipart, uploadPath } from '../helpers/uploads.ts';

/** Sends the headers and the first half of a multipart upload, then nothing more: a stuck client. */
function stuckUpload(baseUrl: string, teamId: string, key: string, content: Buffer) {
  const { body, contentType } = multipartBody([{ content, fileName: 'stuck.png' }]);
  const request = httpRequest(`${baseUrl}${uploadPath(teamId)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': contentType, 'content-length': String(body.length) },
  });
  const response = new Promise<{ status: number; body: any; connection: string | undefined }>((resolve, reject) => {
    request.on('response', (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), connection: res.headers.connection }));
    });
    request.on('error', reject);
  });
  request.write(body.subarray(0, Math.floor(body.length / 2)));
  return { request, response };
}

async function uploadTempFiles(dataDir: string): Promise<string[]> {
  return readdir(join(dataDir, 'files', '.uploads')).catch(() => []);
}

t.test('an upload whose body stops arriving ends with 408 after UPLOAD_IDLE_TIMEOUT_SECONDS and frees its slot', async (t) => {
  const server = await startTestServer(t, { settings: { UPLOAD_IDLE_TIMEOUT_SECONDS: 1, UPLOAD_CONCURRENCY: 1, UPLOAD_QUEUE_LIMIT: 0 } });
  const team = await server.createTeam('Idle');
  const before = await teamStorageState(server.databaseUrl, team.teamId);
  const started = Date.now();
  // Half of 1 MiB is past the unreserved size: the upload holds a storage reservation when it stalls.
  const stuck = stuckUpload(server.baseUrl, team.teamId, team.key, pngLike(MiB));
  const answer = await stuck.response;
  const elapsed = Date.now() - started;
  stuck.request.destroy();

  t.equal(answer.status, 408, 'status 408');
  t.match(answer.body, { name: 'RequestTimeoutError', status: 408, messageKey: 'error.requestTimeout', message: String, value: 1 }, 'the spec\'s error body');
  t.equal(answer.connection, 'close', 'the connection of the unfinished body is closed');
  t.ok(elapsed >= 900 && elapsed < 6000, `ended after the idle timeout (${elapsed} ms)`);

  t.same(await teamStorageState(server.databaseUrl, team.teamId), before, 'no row, nothing counted, no reservation left');
  t.same(await uploadTempFiles(server.dataDir), [], 'the temp file is removed');
  const gate = server.app.services.gate;
  t.equal(gate.running + gate.waiting, 0, 'the admission slot is free');

  const next = await uploadMultipart(server, team.teamId, team.key, { content: pngLike(64 * 1024), fileName: 'next.png' });
  t.equal(next.status, 201, 'the next upload gets the only slot (UPLOAD_CONCURRENCY 1, no queue)');
});

t.test('a slow client that keeps sending within the idle timeout is not cut off', async (t) => {
  const server = await startTestServer(t, { settings: { UPLOAD_IDLE_TIMEOUT_SECONDS: 1 } });
  const team = await server.createTeam('Slow');
  const { body, contentType } = multipartBody([{ content: pngLike(64 * 1024), fileName: 'slow.png' }]);
  const request = httpRequest(`${server.baseUrl}${uploadPath(team.teamId)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${team.key}`, 'content-type': contentType, 'content-length': String(body.length) },
  });
  const response = new Promise<number>((resolve, reject) => {
    request.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    request.on('error', reject);
  });
  // Four pieces, 600 ms apart: 2.4 s in all, longer than the timeout, never idle for 1 s.
  const piece = Math.ceil(body.length / 4);
  for (let offset = 0; offset < body.length; offset += piece) {
    request.write(body.subarray(offset, offset + piece));
    await new Promise((resolve) => setTimeout(resolve, 600));
  }
  request.end();
  t.equal(await response, 201, 'the upload lands');
});

t.test('a slow but steady upload (1 KiB/s) is not cut off by uWS\'s minimum throughput after 10 s', async (t) => {
  // uWS alone closes such a connection after 8-12 s (test/integration/uws-behaviour.test.ts).
  const server = await startTestServer(t);
  const team = await server.createTeam('Trickle');
  const { body, contentType } = multipartBody([{ content: pngLike(14 * 1024), fileName: 'trickle.png' }]);
  const request = httpRequest(`${server.baseUrl}${uploadPath(team.teamId)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${team.key}`, 'content-type': contentType, 'content-length': String(body.length) },
  });
  const response = new Promise<number>((resolve, reject) => {
    request.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    request.on('error', reject);
  });
  const started = Date.now();
  for (let offset = 0; offset < body.length; offset += 1024) {
    request.write(body.subarray(offset, offset + 1024));
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  request.end();
  t.equal(await response, 201, `the upload lands after ${Math.round((Date.now() - started) / 1000)} s`);
});
