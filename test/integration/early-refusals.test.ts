import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import t from 'tap';
import type { Test } from 'tap';
import { RawConnection } from '../helpers/raw-connection.ts';
import { startTestServer } from '../helpers/server.ts';
import { MiB, multipartBody, pngLike, uploadPath } from '../helpers/uploads.ts';

// Issue 17.13: an answer sent before the request body was read (here 402: an 11 MB file for a team
// whose plan allows 10 MB) reaches a client that is still sending. The service answers with
// `Connection: close` and then reads nothing more of a large body (a lingering close: the client's
// writes stall instead of meeting a reset), until uWS's 10 s timeout closes the connection.

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 1_000_000 } });
const team = await server.createTeam('Free', 'free');
const url = `${server.baseUrl}${uploadPath(team.teamId)}`;
const content = pngLike(11 * MiB);
const ROUNDS = 200;
const PARALLEL = 10;

interface Outcome {
  status: number;
  body: any;
  error?: string;
}

/** One upload over node:http. */
function nodeUpload(): Promise<Outcome> {
  const { body, contentType } = multipartBody([{ content, fileName: 'big.png' }]);
  return new Promise((resolve) => {
    let answered = false;
    const request = httpRequest(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${team.key}`, 'content-type': contentType, 'content-length': String(body.length) },
    });
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
    // The whole body in one write, as most callers do; the answer must not be lost to EPIPE.
    request.end(body);
  });
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

t.test(`${ROUNDS} refused 11 MB uploads from node:http each get their 402`, async (t) => {
  expectAllRefused(t, await rounds(nodeUpload));
});

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
