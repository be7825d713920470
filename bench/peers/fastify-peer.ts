/**
 * "What a user would build instead": a small Fastify + @fastify/multipart upload server with the
 * service's two upload routes, streaming the file to the same storage, with nothing else (no
 * database, quota, hashing, type sniffing, admission control or rate limit; a fixed bearer key).
 *
 *   node bench/peers/fastify-peer.ts fs <dir>     files under <dir>/<teamId>/<id>, fsynced like the service's
 *                                                 fs driver (BENCH_FSYNC=0 turns that off)
 *   node bench/peers/fastify-peer.ts s3          objects under $S3_KEY_PREFIX in $S3_BUCKET of $S3_ENDPOINT
 *                                                 via @aws-sdk/lib-storage (8 MiB parts, 2 in flight: the
 *                                                 service's settings)
 *
 * POST /v1/cdn/media/:teamId/upload/file   multipart, the file part streamed to storage
 * POST /v1/cdn/media/:teamId/upload        JSON {fileName, file}: a data URI or bare base64, parsed by
 *                                          Fastify's JSON parser and decoded whole (bodyLimit 150 MB)
 *
 * The key is $BENCH_PEER_KEY (Authorization: Bearer <key>). Listens on 127.0.0.1:$PORT (default any
 * free port) and prints one JSON line {"ready":true,"port":N}.
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import multipart from '@fastify/multipart';
import Fastify from 'fastify';
import type { Readable } from 'node:stream';

const driver = process.argv[2];
const dir = process.argv[3];
if ((driver !== 'fs' && driver !== 's3') || (driver === 'fs' && !dir)) {
  console.error('usage: node bench/peers/fastify-peer.ts fs <dir> | s3');
  process.exit(2);
}
const key = process.env.BENCH_PEER_KEY ?? 'bench-peer-key';
const fsync = process.env.BENCH_FSYNC !== '0';
const MB = 1_000_000;

const s3 =
  driver === 's3'
    ? {
        bucket: process.env.S3_BUCKET ?? 'media-test',
        prefix: process.env.S3_KEY_PREFIX ?? '',
        client: new S3Client({
          endpoint: process.env.S3_ENDPOINT,
          region: process.env.S3_REGION ?? 'us-east-1',
          forcePathStyle: true,
          credentials: { accessKeyId: process.env.S3_ACCESS_KEY_ID ?? '', secretAccessKey: process.env.S3_SECRET_ACCESS_KEY ?? '' },
          requestChecksumCalculation: 'WHEN_REQUIRED',
          responseChecksumValidation: 'WHEN_REQUIRED',
          requestHandler: { connectionTimeout: 5_000, requestTimeout: 120_000, httpAgent: new http.Agent({ keepAlive: true, maxSockets: 64 }) },
        }),
      }
    : null;

async function store(teamId: string, id: string, body: Readable | Buffer): Promise<void> {
  if (s3) {
    await new Upload({
      client: s3.client,
      params: { Bucket: s3.bucket, Key: `${s3.prefix}peer/${teamId}/${id}`, Body: body, ContentType: 'application/octet-stream' },
      partSize: 8 * 1024 * 1024,
      queueSize: 2,
    }).done();
    return;
  }
  const folder = join(dir!, teamId);
  await mkdir(folder, { recursive: true });
  if (Buffer.isBuffer(body)) await writeFile(join(folder, id), body, { flush: fsync });
  else await pipeline(body, createWriteStream(join(folder, id), { flush: fsync }));
}

const app = Fastify({ bodyLimit: 150 * MB, logger: false });
await app.register(multipart, { limits: { fileSize: 260 * MB, files: 1 } });

app.addHook('onRequest', async (request, reply) => {
  if (request.headers.authorization !== `Bearer ${key}`) return reply.code(401).send({ message: 'Authentication failed' });
});

app.post<{ Params: { teamId: string } }>('/v1/cdn/media/:teamId/upload/file', async (request, reply) => {
  const file = await request.file();
  if (!file) return reply.code(400).send({ message: 'no file' });
  const id = randomUUID();
  await store(request.params.teamId, id, file.file);
  return reply.code(201).send({ id, fileName: file.filename, path: `media/team/${request.params.teamId}/${id}` });
});

app.post<{ Params: { teamId: string }; Body: { fileName?: string; file?: string } }>('/v1/cdn/media/:teamId/upload', async (request, reply) => {
  const { fileName, file } = request.body ?? {};
  if (typeof file !== 'string' || typeof fileName !== 'string') return reply.code(400).send({ message: 'file and fileName are required' });
  const comma = file.startsWith('data:') ? file.indexOf(',') : -1;
  const content = Buffer.from(comma >= 0 ? file.slice(comma + 1) : file, 'base64');
  const id = randomUUID();
  await store(request.params.teamId, id, content);
  return reply.code(201).send({ id, fileName, size: content.length, path: `media/team/${request.params.teamId}/${id}` });
});

await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0) });
const address = app.server.address();
process.stdout.write(`${JSON.stringify({ ready: true, port: typeof address === 'object' && address ? address.port : 0 })}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
