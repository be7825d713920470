import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { pino } from 'pino';
import { hashContent, loadXxhash } from '../../src/uploads/hashing/content-hash.ts';
import { MemoryBudget } from '../../src/http/memory-budget.ts';
import { Router } from '../../src/http/router.ts';
import { HttpServer } from '../../src/http/server.ts';
import { json } from '../../src/http/types.ts';
import { startTestServer } from '../helpers/server.ts';
import { connectPg } from '../helpers/database.ts';
import { MiB, multipartBody, pngLike, uploadPath } from '../helpers/uploads.ts';

// uWS reads on after pause() while a sender keeps its receive buffer full, which a client in this
// process cannot do (it is stopped while uWS reads): these bodies come from another process, over
// a real socket, as fast as loopback goes.
const run = promisify(execFile);

/** POSTs the file's bytes from a child process; resolves with the answer's status and body. */
async function postFromChild(url: string, file: string, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  const script = `
    const http = require('node:http');
    const fs = require('node:fs');
    const size = fs.statSync(process.argv[2]).size;
    const request = http.request(process.argv[1], { method: 'POST', headers: { ...JSON.parse(process.argv[3]), 'content-length': size } }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (part) => (text += part));
      response.on('end', () => console.log(JSON.stringify({ status: response.statusCode, body: JSON.parse(text || 'null') })));
    });
    fs.createReadStream(process.argv[2], { highWaterMark: 1024 * 1024 }).pipe(request);
  `;
  const { stdout } = await run(process.execPath, ['-e', script, url, file, JSON.stringify(headers)], { env: { ...process.env, NODE_OPTIONS: '' }, maxBuffer: 1 << 20 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as { status: number; body: any };
}

t.test('a consumer that takes chunks while paused gets what a paused socket still delivers, in order', async (t) => {
  const router = new Router();
  router.add({
    method: 'POST',
    pattern: '/take',
    handler: (request) =>
      new Promise((resolve) => {
        const hash = createHash('sha256');
        let total = 0;
        let transientBytes = 0;
        let paused = false;
        request.body.consume({
          chunk: (data, transient) => {
            hash.update(data); // copies: nothing is kept past the call
            total += data.length;
            if (transient) transientBytes += data.length;
            if (paused) return;
            // A writer behind after every chunk that came while flowing, caught up 5 ms later.
            paused = true;
            request.body.pause();
            setTimeout(() => {
              paused = false;
              request.body.resume();
            }, 5);
          },
          takesWhilePaused: () => true,
          end: () => resolve(json(200, { sha256: hash.digest('hex'), total, transientBytes })),
          abort: () => resolve(json(499, {})),
        });
      }),
  });
  const server = new HttpServer({
    router,
    logger: pino({ level: 'silent' }),
    bodyBuffering: { memoryBytes: 64 * 1024, extra: { perBody: 1024 * 1024, shared: new MemoryBudget(4 * MiB) }, spoolDirectory: t.testdir() },
  });
  const port = await server.listen('127.0.0.1', 0);
  t.teardown(() => server.close());

  const content = pngLike(64 * MiB);
  const file = join(t.testdir(), 'body.bin');
  await writeFile(file, content);
  const answer = await postFromChild(`http://127.0.0.1:${port}/take`, file, { 'content-type': 'application/octet-stream' });
  t.equal(answer.status, 200);
  t.equal(answer.body.total, content.length, 'every byte arrived');
  t.equal(answer.body.sha256, createHash('sha256').update(content).digest('hex'), 'in order and unchanged');
  t.ok(answer.body.transientBytes > 0, `bytes a paused socket delivered were handed over as views (${answer.body.transientBytes})`);
});

t.test('an fs upload sent as fast as loopback goes from another process stores exactly the bytes sent', async (t) => {
  const xxhash = await loadXxhash();
  const server = await startTestServer(t, { settings: { STORAGE_DRIVER: 'fs', RATE_LIMIT_POINTS: 100_000 } });
  const team = await server.createTeam('Fleet', 'enterprise');
  const content = pngLike(96 * MiB + 5);
  const { body, contentType } = multipartBody([{ fileName: 'big.png', content }]);
  const file = join(t.testdir(), 'upload.bin');
  await writeFile(file, body);
  const answer = await postFromChild(`${server.baseUrl}${uploadPath(team.teamId)}`, file, { 'content-type': contentType, authorization: `Bearer ${team.key}` });
  t.equal(answer.status, 201, JSON.stringify(answer.body).slice(0, 300));
  t.equal(answer.body.size, content.length);
  t.equal(answer.body.hash, hashContent(xxhash, content), 'the hash of what was received');
  const client = await connectPg(server.databaseUrl);
  const { rows } = await client.query<{ storage_key: string }>('select storage_key from media_file where id = $1', [answer.body.id]);
  await client.end();
  const stored: Buffer[] = [];
  for await (const chunk of await server.app.services.store.read(rows[0]!.storage_key)) stored.push(chunk as Buffer);
  t.ok(Buffer.concat(stored).equals(content), 'the stored file is the bytes sent, in order');
});
