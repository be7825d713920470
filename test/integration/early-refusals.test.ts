import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { Agent, request as httpRequest } from 'node:http';
import { join } from 'node:path';
import t from 'tap';
import type { Test } from 'tap';
import { RawConnection, type ParsedResponse } from '../helpers/raw-connection.ts';
import { startTestServer } from '../helpers/server.ts';
import { MiB, multipartBody, pngLike, uploadPath } from '../helpers/uploads.ts';
import { eventually, sleep } from '../helpers/wait.ts';

// Issue 17.13: an answer sent before the request body was read (here 402: an 11 MB file for a team
// whose plan allows 10 MB) reaches a client that is still sending. The service answers with
// `Connection: close`; for a keep-alive request it then reads nothing more of a large body (the
// client's writes stall instead of meeting a reset) until uWS's 10 s timeout closes the connection.
// Issue 32.2: a request that itself sends `Connection: close` (node:http without an agent, Go without
// keep-alive, PHP streams) is closed by uWS as soon as its answer ends; with its body unread that was
// a reset, and the answer was often lost (26 to 28 of 40 piped uploads ended in EPIPE). Its answer is now sent
// chunked and ended only once the rest of the body has been read and discarded (a lingering close),
// or after 5 s without data, or 30 s in all.

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 1_000_000 } });
const team = await server.createTeam('Free', 'free');
const url = `${server.baseUrl}${uploadPath(team.teamId)}`;
const content = pngLike(11 * MiB);
const ROUNDS = 200;
const PARALLEL = 10;
const PIPED_ROUNDS = 40;

interface Outcome {
  status: number;
  body: any;
  error?: string;
}

/** How a node:http client connects: `keep-alive` (an Agent that keeps connections) or `close` (no agent: `Connection: close`). */
type ConnectionMode = 'keep-alive' | 'close';
const keepAliveAgent = new Agent({ keepAlive: true });
t.teardown(() => keepAliveAgent.destroy());
const agentFor = (mode: ConnectionMode) => (mode === 'keep-alive' ? keepAliveAgent : false);

/** Collects the answer to `request` (sent by the caller); an error before any answer is an outcome with status 0. */
function outcomeOf(request: ReturnType<typeof httpRequest>): Promise<Outcome> {
  return new Promise((resolve) => {
    let answered = false;
    request.on('response', (response) => {
      answered = true;
      let text = '';
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => {
        request.destroy();
        let parsed: any;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = text;
        }
        resolve({ status: response.statusCode ?? 0, body: parsed });
      });
      response.on('error', (error) => resolve({ status: response.statusCode ?? 0, body: text, error: error.message }));
    });
    request.on('error', (error) => {
      if (!answered) resolve({ status: 0, body: null, error: error.message });
    });
  });
}

/** The 11 MB multipart body, as a file on disk. */
const { body: multipartFile, contentType: multipartType } = multipartBody([{ content, fileName: 'big.png' }]);
const multipartPath = join(server.dataDir, 'eleven-mb.multipart');
await writeFile(multipartPath, multipartFile);

/** One upload streamed from disk, `createReadStream(file).pipe(request)`, as the reproduction does. */
function pipedUpload(mode: ConnectionMode): Promise<Outcome> {
  const request = httpRequest(url, {
    method: 'POST',
    agent: agentFor(mode),
    headers: { authorization: `Bearer ${team.key}`, 'content-type': multipartType, 'content-length': String(multipartFile.length) },
  });
  const outcome = outcomeOf(request);
  createReadStream(multipartPath).pipe(request);
  return outcome;
}

/** One upload over node:http, the whole body in one write, as most callers do; the answer must not be lost to EPIPE. */
function nodeUpload(mode: ConnectionMode): Promise<Outcome> {
  const { body, contentType } = multipartBody([{ content, fileName: 'big.png' }]);
  const request = httpRequest(url, {
    method: 'POST',
    agent: agentFor(mode),
    headers: { authorization: `Bearer ${team.key}`, 'content-type': contentType, 'content-length': String(body.length) },
  });
  const outcome = outcomeOf(request);
  request.end(body);
  return outcome;
}

function curlUpload(file: string): Promise<Outcome> {
  return new Promise((resolve) => {
    execFile('curl', ['-sS', '-o', '-', '-w', '\n%{http_code}', '-H', `Authorization: Bearer ${team.key}`, '-F', `file=@${file};type=image/png`, url],
      { maxBuffer: 1024 * 1024 }, (error, stdout, stderr) => {
        const lines = stdout.trimEnd().split('\n');
        const status = Number(lines.pop());
        let body: any;
        try {
          body = JSON.parse(lines.join('\n'));
        } catch {
          body = lines.join('\n');
        }
        resolve({ status, body, error: error ? `${error.message} ${stderr}` : undefined });
      });
  });
}

async function rounds(run: () => Promise<Outcome>): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  for (let done = 0; done < ROUNDS; done += PARALLEL) {
    outcomes.push(...(await Promise.all(Array.from({ length: Math.min(PARALLEL, ROUNDS - done) }, run))));
  }
  return outcomes;
}

function expectAllRefused(t: Test, outcomes: Outcome[]) {
  const refused = outcomes.filter((each) => each.status === 402 && each.body?.messageKey === 'error.teamLimits.maxMediaFileSize' && each.body?.status === 402);
  const others = outcomes.filter((each) => !refused.includes(each));
  t.equal(refused.length, outcomes.length, `every upload got its 402 in the spec's body (${others.length} did not: ${JSON.stringify(others.slice(0, 3))})`);
}

for (const mode of ['keep-alive', 'close'] as const) {
  t.test(`${ROUNDS} refused 11 MB uploads from node:http (${mode}) each get their 402`, async (t) => {
    expectAllRefused(t, await rounds(() => nodeUpload(mode)));
  });

  t.test(`${PIPED_ROUNDS} refused 11 MB uploads piped from a file (node:http, ${mode}), one after the other, each get their 402`, async (t) => {
    const outcomes: Outcome[] = [];
    for (let round = 0; round < PIPED_ROUNDS; round++) outcomes.push(await pipedUpload(mode));
    expectAllRefused(t, outcomes);
  });
}

t.test(`${ROUNDS} refused 11 MB uploads from curl -F (Expect: 100-continue) each get their 402`, async (t) => {
  const file = join(server.dataDir, 'eleven-mb.png');
  await writeFile(file, content);
  expectAllRefused(t, await rounds(() => curlUpload(file)));
});

t.test('a refused client that keeps sending is not read from, and is closed within uWS\'s timeout', async (t) => {
  const connection = await RawConnection.open(server.app.port);
  t.teardown(() => connection.destroy());
  const { contentType } = multipartBody([{ content: Buffer.alloc(1), fileName: 'x.png' }]);
  connection.write([
    `POST ${uploadPath(team.teamId)} HTTP/1.1`, 'Host: 127.0.0.1', `Authorization: Bearer ${team.key}`,
    `Content-Type: ${contentType}`, `Content-Length: ${200 * MiB}`, '', '',
  ].join('\r\n'));
  const started = Date.now();
  let written = 0;
  const filler = Buffer.alloc(256 * 1024);
  let writing = true;
  const pump = () => {
    while (writing && !connection.isClosed && connection.socket.write(filler)) written += filler.length;
  };
  connection.socket.on('drain', () => {
    written += filler.length;
    pump();
  });
  pump();
  const answer = await connection.next();
  t.equal(answer.status, 402, 'the refusal arrives while the client is still sending');
  t.equal(answer.headers['connection'], 'close', 'Connection: close');
  await new Promise((resolve) => setTimeout(resolve, 1000));
  t.notOk(connection.isClosed, 'the connection is not closed at once: the client has time to read the answer');
  await Promise.race([connection.closed, new Promise((resolve) => setTimeout(resolve, 20_000))]);
  writing = false;
  const elapsed = Date.now() - started;
  t.ok(connection.isClosed, `the server closed the connection (after ${elapsed} ms)`);
  t.ok(elapsed < 15_000, 'within uWS\'s 10 s timeout (4 s granularity)');
  t.ok(written < 64 * MiB, `the client could send only what socket buffers hold (${(written / MiB).toFixed(1)} MiB of 200 MiB)`);
});

/** Opens a raw connection and sends the head of an upload that declares `declared` body bytes. */
async function rawUploadHead(declared: number, extraHeaders: string[] = []): Promise<{ connection: RawConnection; errors: string[] }> {
  const connection = await RawConnection.open(server.app.port);
  const errors: string[] = [];
  connection.socket.on('error', (error: NodeJS.ErrnoException) => errors.push(error.code ?? error.message));
  const { contentType } = multipartBody([{ content: Buffer.alloc(1), fileName: 'x.png' }]);
  connection.write([
    `POST ${uploadPath(team.teamId)} HTTP/1.1`, 'Host: 127.0.0.1', `Authorization: Bearer ${team.key}`,
    `Content-Type: ${contentType}`, `Content-Length: ${declared}`, ...extraHeaders, '', '',
  ].join('\r\n'));
  return { connection, errors };
}

/** Whether the answer's status line has arrived (a lingering answer is complete only when the connection closes). */
const answerStarted = (connection: RawConnection) => connection.pending.subarray(0, 12).toString('latin1') === 'HTTP/1.1 402';

function expectLingeringAnswer(t: Test, answer: ParsedResponse) {
  t.equal(answer.status, 402, 'the refusal');
  t.equal(answer.json?.messageKey, 'error.teamLimits.maxMediaFileSize', 'in the spec\'s body');
  t.equal(answer.headers['connection'], 'close', 'Connection: close');
}

t.test('Connection: close, whole body sent: the answer arrives while sending, the body is read to its end, then a clean close', async (t) => {
  const declared = 40 * MiB;
  const { connection, errors } = await rawUploadHead(declared, ['Connection: close']);
  t.teardown(() => connection.destroy());
  let written = 0;
  let answeredAt = -1;
  const filler = Buffer.alloc(256 * 1024);
  for (; written < declared && !connection.isClosed; written += filler.length) {
    if (!connection.socket.write(filler)) await new Promise((resolve) => connection.socket.once('drain', resolve).once('close', resolve));
    if (answeredAt < 0 && answerStarted(connection)) answeredAt = written;
  }
  t.ok(answeredAt >= 0 && answeredAt < declared, `the answer arrived while the client was still sending (after ${(answeredAt / MiB).toFixed(1)} MiB)`);
  t.equal(written, declared, 'the client could send its whole body: it was read, not reset');
  const answer = await connection.next({ timeoutMs: 5000 });
  expectLingeringAnswer(t, answer);
  await Promise.race([connection.closed, sleep(5000)]);
  t.ok(connection.isClosed, 'the server closed the connection once the body was read');
  t.same(errors, [], 'without a reset');
});

t.test('Connection: close, the client stops sending: closed after the idle gap (5 s); steady sender: after 30 s in all', async (t) => {
  const stopping = (async () => {
    const { connection, errors } = await rawUploadHead(200 * MiB, ['Connection: close']);
    t.teardown(() => connection.destroy());
    connection.write(Buffer.alloc(MiB));
    t.ok(await eventually(() => answerStarted(connection)), 'stopping client: the answer has started');
    const lastByte = Date.now();
    await Promise.race([connection.closed, sleep(15_000)]);
    const elapsed = Date.now() - lastByte;
    t.ok(connection.isClosed && elapsed >= 4000 && elapsed < 9000, `stopping client: closed ${elapsed} ms after its last byte (5 s idle gap)`);
    expectLingeringAnswer(t, await connection.next());
    t.same(errors, [], 'stopping client: without a reset');
  })();
  const steady = (async () => {
    const { connection } = await rawUploadHead(200 * MiB, ['Connection: close']);
    t.teardown(() => connection.destroy());
    const started = Date.now();
    let written = 0;
    // 128 KiB every 500 ms: well within the idle gap, too slow to finish 200 MiB before the total limit.
    while (!connection.isClosed && Date.now() - started < 45_000) {
      connection.write(Buffer.alloc(128 * 1024));
      written += 128 * 1024;
      await sleep(500);
    }
    const elapsed = Date.now() - started;
    t.ok(connection.isClosed && elapsed >= 28_000 && elapsed < 38_000, `steady client: closed after ${elapsed} ms (30 s in all), having sent ${(written / MiB).toFixed(1)} MiB`);
    expectLingeringAnswer(t, await connection.next());
  })();
  await Promise.all([stopping, steady]);
});
