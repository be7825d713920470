import { request as httpRequest, type ClientRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorBodyOf, MediaApiError, MediaConnectionError } from './errors.ts';

/** How requests are retried; every field has a default. */
export interface RetryOptions {
  /** Attempts in all, the first included (default 5). */
  attempts?: number;
  /** Retry-After is honoured up to this many seconds (default 30); a longer one is waited this long. */
  maxRetryAfterSeconds?: number;
  /** First back-off after a connection failure, doubled each time (default 250 ms). */
  baseDelayMs?: number;
  /** Up to this fraction of each wait is added at random, so a fleet does not retry in step (default 0.2). */
  jitter?: number;
}

/** A request body: a buffer, or a factory of streams; each attempt opens a fresh stream when it can. */
export type RequestBody =
  | { kind: 'buffer'; contentType: string; data: Buffer }
  | {
      kind: 'stream';
      contentType: string;
      length: number | undefined;
      open(): Readable;
      /** False for a stream given by the caller: once a byte of it was read it cannot be sent again. */
      rewindable: boolean;
    };

export interface TransportRequest {
  method: string;
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  headers?: Record<string, string>;
  body?: RequestBody;
  /** Safe to send again after a connection failure or a 503 of any kind (GET, HEAD, DELETE, uploads with an Idempotency-Key). */
  idempotent: boolean;
  /** Bytes of the body written so far, and the body's length when known; starts from 0 on a retry. */
  onProgress?: (sent: number, total: number | undefined) => void;
  /** Answer with the response stream instead of reading it (file downloads). */
  stream?: boolean;
}

export interface TransportResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

export interface StreamedResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Readable;
}

export interface TransportOptions {
  baseUrl: string;
  headers: Record<string, string>;
  retry?: RetryOptions;
  /** Per attempt: no answer for this long ends it (default 120 s of socket inactivity). */
  timeoutMs?: number;
}

interface AttemptResult {
  status: number;
  headers: IncomingHttpHeaders;
  body: Readable;
}

class AttemptError extends MediaConnectionError {
  /** Bytes of the body already consumed from its source when the attempt failed. */
  readonly consumed: number;
  /** Reset on a kept-alive connection the server had just closed: the request never reached it. */
  readonly staleConnection: boolean;
  constructor(message: string, cause: unknown, consumed: number, reusedSocket: boolean) {
    super(message, { cause, code: (cause as NodeJS.ErrnoException | undefined)?.code });
    this.consumed = consumed;
    this.staleConnection = reusedSocket && this.code === 'ECONNRESET';
  }
}

const UPLOAD_BUSY = 'error.media.uploadBusy';
/** 409: the first attempt of this Idempotency-Key is still running on the service (its answer may have been lost on the way). */
const IDEMPOTENCY_IN_FLIGHT = 'error.media.idempotencyInFlight';

export class Transport {
  readonly #baseUrl: URL;
  readonly #headers: Record<string, string>;
  readonly #retry: Required<RetryOptions>;
  readonly #timeoutMs: number;

  constructor(options: TransportOptions) {
    this.#baseUrl = new URL(options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`);
    this.#headers = options.headers;
    this.#retry = { attempts: 5, maxRetryAfterSeconds: 30, baseDelayMs: 250, jitter: 0.2, ...options.retry };
    this.#timeoutMs = options.timeoutMs ?? 120_000;
  }

  /** Sends `request`, retrying as RetryOptions say; answers the final response (any status). */
  async send(request: TransportRequest): Promise<TransportResponse> {
    const response = await this.sendStreamed(request);
    const chunks: Buffer[] = [];
    for await (const chunk of response.body) chunks.push(chunk as Buffer);
    return { status: response.status, headers: response.headers, text: Buffer.concat(chunks).toString('utf8') };
  }

  /** As send(), with the final answer's body as a stream; retried answers are read and dropped. */
  async sendStreamed(request: TransportRequest): Promise<StreamedResponse> {
    const url = this.#url(request);
    let consumedFromSource = 0;
    let staleRetried = false;
    for (let attempt = 1; ; attempt++) {
      const last = attempt >= this.#retry.attempts;
      const body = request.body;
      if (attempt > 1 && body?.kind === 'stream' && !body.rewindable && consumedFromSource > 0) {
        throw new MediaConnectionError('the upload cannot be retried: its stream was partly sent (give a file path or a buffer to allow retries)', { code: 'ENOTREWINDABLE' });
      }
      let result: AttemptResult;
      try {
        result = await this.#attempt(url, request);
      } catch (error) {
        if (!(error instanceof AttemptError)) throw error;
        consumedFromSource += error.consumed;
        // As node:http's documentation advises, a request reset on a reused connection is sent once more, whatever it is.
        const staleRetry = error.staleConnection && !staleRetried;
        if (last || !(request.idempotent || staleRetry)) throw error;
        if (staleRetry) staleRetried = true;
        await sleep(this.#withJitter(this.#retry.baseDelayMs * 2 ** (attempt - 1)));
        continue;
      }
      if (!last && (result.status === 429 || result.status === 503 || (result.status === 409 && request.idempotent))) {
        const text = await readText(result.body);
        const error = errorBodyOf(result.status, text);
        const retryable =
          result.status === 429 || error.messageKey === UPLOAD_BUSY || (request.idempotent && (result.status === 503 || error.messageKey === IDEMPOTENCY_IN_FLIGHT));
        if (retryable && !(body?.kind === 'stream' && !body.rewindable)) {
          await sleep(this.#retryAfterDelay(result.headers['retry-after'], attempt));
          continue;
        }
        throw new MediaApiError(error, header(result.headers, 'x-request-id'), retryAfterSeconds(result.headers['retry-after']));
      }
      return result;
    }
  }

  #url(request: TransportRequest): URL {
    const url = new URL(request.path.replace(/^\//, ''), this.#baseUrl);
    for (const [name, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    return url;
  }

  #retryAfterDelay(value: string | undefined, attempt: number): number {
    const seconds = retryAfterSeconds(value);
    const base = seconds === undefined ? this.#retry.baseDelayMs * 2 ** (attempt - 1) : Math.min(seconds, this.#retry.maxRetryAfterSeconds) * 1000;
    return this.#withJitter(base);
  }

  #withJitter(ms: number): number {
    return Math.round(ms * (1 + Math.random() * this.#retry.jitter));
  }

  /** One request: writes the body with backpressure, stops writing once the server answers (an early refusal). */
  #attempt(url: URL, request: TransportRequest): Promise<AttemptResult> {
    const body = request.body;
    const headers: Record<string, string> = { ...this.#headers, ...request.headers };
    let source: Readable | undefined;
    let total: number | undefined;
    if (body?.kind === 'buffer') {
      headers['content-type'] = body.contentType;
      headers['content-length'] = String(body.data.length);
      total = body.data.length;
    } else if (body?.kind === 'stream') {
      headers['content-type'] = body.contentType;
      total = body.length;
      if (total !== undefined) headers['content-length'] = String(total);
      source = body.open();
    } else if (request.method !== 'GET' && request.method !== 'HEAD') {
      headers['content-length'] = '0';
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<AttemptResult>((resolve, reject) => {
      let answered = false;
      let consumed = 0;
      const outgoing = send(url, { method: request.method, headers, timeout: this.#timeoutMs });
      outgoing.on('response', (response) => {
        answered = true;
        source?.destroy();
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: response });
      });
      outgoing.on('timeout', () => outgoing.destroy(Object.assign(new Error('no answer in time'), { code: 'ETIMEDOUT' })));
      outgoing.on('error', (error: NodeJS.ErrnoException) => {
        source?.destroy();
        // A server that answers early (a refusal) may close before the whole body is written.
        if (answered) return;
        reject(new AttemptError(`${request.method} ${url.pathname}: ${error.message}`, error, consumed, outgoing.reusedSocket));
      });
      const write = async () => {
        if (body?.kind === 'buffer') {
          outgoing.end(body.data, () => request.onProgress?.(body.data.length, total));
          return;
        }
        if (!source) {
          outgoing.end();
          return;
        }
        request.onProgress?.(0, total);
        let sent = 0;
        try {
          for await (const chunk of source) {
            if (answered || outgoing.destroyed) return;
            consumed += (chunk as Buffer).length;
            if (!outgoing.write(chunk)) await drainedOrClosed(outgoing);
            sent += (chunk as Buffer).length;
            request.onProgress?.(sent, total);
          }
          if (!answered) outgoing.end();
        } catch (error) {
          if (!answered) outgoing.destroy(error as Error);
        }
      };
      void write();
    });
  }
}

function drainedOrClosed(outgoing: ClientRequest): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      outgoing.off('drain', done);
      outgoing.off('close', done);
      resolve();
    };
    outgoing.on('drain', done);
    outgoing.on('close', done);
  });
}

async function readText(body: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export function retryAfterSeconds(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - Date.now()) / 1000);
}

export { header };
