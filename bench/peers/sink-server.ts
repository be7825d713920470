/**
 * A neutral reference server on plain node:http: it accepts any POST, reads the whole body and
 * answers 201 with a small JSON body. No parsing, no auth, no database.
 *
 *   node bench/peers/sink-server.ts discard            reads and drops the body (upper bound of the HTTP path)
 *   node bench/peers/sink-server.ts file <dir>         writes the raw body to <dir>/<id>.part, then renames it
 *                                                      to <dir>/<id> (upper bound of the fs path)
 *
 * The file mode fsyncs each file before the rename, as the service's fs driver does
 * (BENCH_FSYNC=0 turns that off). Listens on 127.0.0.1:$PORT (default: any free port) and prints
 * one JSON line {"ready":true,"port":N} once listening.
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, unlink } from 'node:fs/promises';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';

const mode = process.argv[2];
const dir = process.argv[3];
if ((mode !== 'discard' && mode !== 'file') || (mode === 'file' && !dir)) {
  console.error('usage: node bench/peers/sink-server.ts discard | file <dir>');
  process.exit(2);
}
const fsync = process.env.BENCH_FSYNC !== '0';
if (dir) await mkdir(dir, { recursive: true });

const server = createServer((request, response) => {
  const answer = (status: number, body: unknown) => {
    const text = JSON.stringify(body);
    response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    response.end(text);
  };
  if (request.method !== 'POST') return answer(405, { message: 'POST only' });
  const id = randomUUID();
  if (mode === 'discard') {
    let size = 0;
    request.on('data', (chunk: Buffer) => (size += chunk.length));
    request.on('end', () => answer(201, { id, size }));
    request.on('error', () => response.destroy());
    return;
  }
  const temp = join(dir!, `${id}.part`);
  pipeline(request, createWriteStream(temp, { flush: fsync }))
    .then(() => rename(temp, join(dir!, id)))
    .then(
      () => answer(201, { id }),
      (error: unknown) => {
        void unlink(temp).catch(() => undefined);
        if (!response.headersSent) answer(500, { message: String(error) });
      },
    );
});
server.keepAliveTimeout = 30_000;
server.headersTimeout = 60_000;
server.requestTimeout = 0;

server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  process.stdout.write(`${JSON.stringify({ ready: true, port })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
