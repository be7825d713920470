/**
 * The load generator: a separate process (forked by bench/run.ts) that keeps a fixed number of
 * uploads in flight against one target and reports what happened.
 *
 * HTTP targets (the service, the sinks, the Fastify peer) get an undici Pool with one connection
 * per in-flight upload. The "s3" target uploads the same file content straight to the S3 server
 * with @aws-sdk/lib-storage (the same part size and queue size as the service's s3 driver).
 *
 * Protocol (IPC): the parent sends { type: 'run', id, job }, the client answers
 * { type: 'result', id, result } or { type: 'error', id, message }; { type: 'exit' } ends it.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { Pool } from 'undici';
import { chooseSize, PayloadFactory, prng, type Workload } from './payloads.ts';
import type { PhaseResult } from './stats.ts';

export interface HttpTarget {
  kind: 'http';
  origin: string;
  teamId: string;
  apiKey: string;
}

export interface S3Target {
  kind: 's3';
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Objects are written under `${keyPrefix}direct/`. */
  keyPrefix: string;
}

export type Target = HttpTarget | S3Target;

export interface Job {
  target: Target;
  workload: Workload;
  concurrency: number;
  stop: { kind: 'duration'; seconds: number } | { kind: 'count'; uploads: number };
  /** After a 503 with Retry-After, that client waits that long before its next upload (as the spec asks). */
  honorRetryAfter: boolean;
  /** No upload starts that would take the file bytes started in this job above this (the S3 space guard). */
  maxBytes?: number;
  seed: number;
}

export type ClientRequest = { type: 'run'; id: number; job: Job } | { type: 'exit' };
export type ClientAnswer = { type: 'result'; id: number; result: PhaseResult } | { type: 'error'; id: number; message: string } | { type: 'ready' };

/** Part size and parts in flight of the service's s3 driver (src/storage/s3/s3-object-store.ts). */
const S3_PART_SIZE = 8 * 1024 * 1024;
const S3_QUEUE_SIZE = 2;

const payloads = new PayloadFactory();

interface Attempt {
  status: string;
  ok: boolean;
  retryAfterSeconds: number | null;
  errorSample?: string;
}

function errorCode(error: unknown): string {
  const shape = error as { code?: string; name?: string; $metadata?: { httpStatusCode?: number }; cause?: unknown } | null;
  if (shape?.$metadata?.httpStatusCode) return String(shape.$metadata.httpStatusCode);
  const cause = shape?.cause as { code?: string } | undefined;
  return shape?.code ?? cause?.code ?? shape?.name ?? 'error';
}

async function runJob(job: Job): Promise<PhaseResult> {
  const result: PhaseResult = { seconds: 0, attempts: 0, ok: 0, okBytes: 0, statuses: {}, busyWithoutRetryAfter: 0, latencies: [], errorSamples: [] };
  // Chooses the next upload (its size) and returns how to send it.
  let prepare: (random: () => number, variant: number) => { bytes: number; send: () => Promise<Attempt> };
  let close: () => Promise<void>;

  if (job.target.kind === 'http') {
    const target = job.target;
    const pool = new Pool(target.origin, {
      connections: job.concurrency,
      pipelining: 1,
      headersTimeout: 300_000,
      bodyTimeout: 300_000,
      keepAliveTimeout: 30_000,
    });
    close = () => pool.destroy();
    prepare = (random, variant) => {
      const upload = payloads.next(job.workload, random, variant);
      return { bytes: upload.contentBytes, send: () => sendHttp(upload) };
    };
    const sendHttp = async (upload: ReturnType<typeof payloads.next>): Promise<Attempt> => {
      const response = await pool.request({
        path: `/v1/cdn/media/${target.teamId}${upload.route}`,
        method: 'POST',
        headers: {
          authorization: `Bearer ${target.apiKey}`,
          'content-type': upload.contentType,
          'content-length': String(upload.wireBytes),
        },
        // undici sends async iterables chunk by chunk with backpressure (its types omit them).
        body: typeof upload.body === 'function' ? (upload.body() as unknown as Readable) : upload.body,
      });
      const text = await response.body.text();
      const ok = response.statusCode >= 200 && response.statusCode < 300;
      const retryAfter = response.headers['retry-after'];
      return {
        status: String(response.statusCode),
        ok,
        retryAfterSeconds: typeof retryAfter === 'string' && /^\d+$/.test(retryAfter) ? Number(retryAfter) : null,
        ...(ok ? {} : { errorSample: `${response.statusCode} ${text.slice(0, 300)}` }),
      };
    };
  } else {
    const target = job.target;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
    const client = new S3Client({
      endpoint: target.endpoint,
      region: target.region,
      forcePathStyle: true,
      credentials: { accessKeyId: target.accessKeyId, secretAccessKey: target.secretAccessKey },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: { connectionTimeout: 5_000, requestTimeout: 120_000, httpAgent: agent },
    });
    close = async () => {
      client.destroy();
      agent.destroy();
    };
    prepare = (random, variant) => {
      // Same size choice as an HTTP upload of this workload; only the file content is sent.
      const bytes = chooseSize(job.workload.size, random);
      const send = async (): Promise<Attempt> => {
        const body = payloads.contentBody(job.workload.content, bytes, variant);
        await new Upload({
          client,
          params: { Bucket: target.bucket, Key: `${target.keyPrefix}direct/${randomUUID()}`, Body: body, ContentType: 'application/octet-stream' },
          partSize: S3_PART_SIZE,
          queueSize: S3_QUEUE_SIZE,
        }).done();
        return { status: '201', ok: true, retryAfterSeconds: null };
      };
      return { bytes, send };
    };
  }

  // Real images are encoded once per size, on first use: before the clock, not in the first phase's time.
  if (job.workload.content === 'image' && job.workload.size.kind === 'fixed') payloads.content('image', job.workload.size.bytes, 0);

  const started = performance.now();
  let lastEnd = started;
  const deadline = job.stop.kind === 'duration' ? started + job.stop.seconds * 1000 : Infinity;
  let remaining = job.stop.kind === 'count' ? job.stop.uploads : Infinity;
  let consecutiveFailures = 0;
  let bytesStarted = 0;
  const maxBytes = job.maxBytes ?? Infinity;

  const worker = async (index: number) => {
    const random = prng(job.seed * 1000 + index);
    let variant = index;
    while (performance.now() < deadline && remaining > 0 && consecutiveFailures < 1000) {
      variant++;
      const next = prepare(random, variant);
      if (bytesStarted + next.bytes > maxBytes) {
        result.stoppedByMaxBytes = true;
        break;
      }
      bytesStarted += next.bytes;
      remaining--;
      const begin = performance.now();
      let attempt: Attempt;
      try {
        attempt = await next.send();
      } catch (error) {
        attempt = { status: errorCode(error), ok: false, retryAfterSeconds: null, errorSample: String((error as Error)?.message ?? error).slice(0, 300) };
      }
      const end = performance.now();
      lastEnd = Math.max(lastEnd, end);
      result.attempts++;
      result.statuses[attempt.status] = (result.statuses[attempt.status] ?? 0) + 1;
      if (attempt.ok) {
        consecutiveFailures = 0;
        result.ok++;
        result.okBytes += next.bytes;
        result.latencies.push(end - begin);
        continue;
      }
      consecutiveFailures++;
      if (attempt.errorSample && result.errorSamples.length < 5) result.errorSamples.push(attempt.errorSample);
      if (attempt.status === '503' && attempt.retryAfterSeconds === null) result.busyWithoutRetryAfter++;
      // A refused upload is retried by the next loop turn; count-bounded jobs still send `uploads` attempts.
      const wait = job.honorRetryAfter && attempt.retryAfterSeconds !== null ? attempt.retryAfterSeconds * 1000 : /^\d+$/.test(attempt.status) ? 0 : 20;
      if (wait > 0) {
        const left = deadline - performance.now();
        if (left <= 0) break;
        await sleep(Math.min(wait, left));
      }
    }
  };

  try {
    await Promise.all(Array.from({ length: job.concurrency }, (_, index) => worker(index)));
  } finally {
    await close().catch(() => undefined);
  }
  result.seconds = (lastEnd - started) / 1000;
  return result;
}

function answer(message: ClientAnswer): void {
  process.send?.(message);
}

if (process.send) {
  process.on('message', (message: ClientRequest) => {
    if (message.type === 'exit') {
      process.disconnect();
      process.exit(0);
    }
    if (message.type !== 'run') return;
    runJob(message.job).then(
      (result) => answer({ type: 'result', id: message.id, result }),
      (error: unknown) => answer({ type: 'error', id: message.id, message: String((error as Error)?.stack ?? error) }),
    );
  });
  answer({ type: 'ready' });
}
