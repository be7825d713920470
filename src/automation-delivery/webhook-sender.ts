import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { guardedLookup, isPrivateAddress, PrivateTargetError } from '../domain/automations/target-url.ts';

/** How much of a receiver's answer is kept for `lastError`. */
const MAX_ANSWER_BYTES = 512;

export interface WebhookRequest {
  url: string;
  body: Buffer;
  headers: Record<string, string>;
  timeoutMs: number;
  /** Aborts the request (shutdown). */
  signal?: AbortSignal;
}

/** The receiver answered (any status). */
export interface WebhookAnswer {
  status: number;
  /** The first bytes of the answer, as text. */
  body: string;
  retryAfter: string | undefined;
}

export class WebhookSendError extends Error {
  override name = 'WebhookSendError';
}

export interface WebhookSenderOptions {
  /** AUTOMATION_ALLOW_PRIVATE_TARGETS: false refuses non-public addresses, also after DNS. */
  allowPrivateTargets: boolean;
  userAgent: string;
}

/**
 * Sends one webhook request with node:http(s): redirects are not followed (a
 * 3xx is an answer like any other, and so a failed attempt), the whole exchange
 * is bounded by `timeoutMs`, and unless private targets are allowed the
 * connection is refused when the host resolves to a non-public address.
 * Connections are kept alive per instance and closed by close().
 */
export class WebhookSender {
  private readonly allowPrivateTargets: boolean;
  private readonly userAgent: string;
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: 64, timeout: 30_000 });
  private readonly httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 64, timeout: 30_000 });

  constructor(options: WebhookSenderOptions) {
    this.allowPrivateTargets = options.allowPrivateTargets;
    this.userAgent = options.userAgent;
  }

  async send(request: WebhookRequest): Promise<WebhookAnswer> {
    const url = new URL(request.url);
    const secure = url.protocol === 'https:';
    if (!secure && url.protocol !== 'http:') throw new WebhookSendError(`unsupported protocol ${url.protocol}`);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!this.allowPrivateTargets && isIP(host) && isPrivateAddress(host)) {
      throw new WebhookSendError(`${host} is not a public address (AUTOMATION_ALLOW_PRIVATE_TARGETS is off)`);
    }
    const timeout = AbortSignal.timeout(request.timeoutMs);
    const signal = request.signal ? AbortSignal.any([timeout, request.signal]) : timeout;
    const transport = secure ? https : http;
    return new Promise<WebhookAnswer>((resolve, reject) => {
      let settled = false;
      const fail = (error: unknown) => {
        if (settled) return;
        settled = true;
        if (timeout.aborted) reject(new WebhookSendError(`no answer within ${request.timeoutMs} ms`));
        else if (request.signal?.aborted) reject(new WebhookSendError('the service stopped during the attempt'));
        else reject(new WebhookSendError(describeError(error)));
      };
      const outgoing = transport.request(url, {
        method: 'POST',
        agent: secure ? this.httpsAgent : this.httpAgent,
        headers: { 'user-agent': this.userAgent, 'content-type': 'application/json', 'content-length': String(request.body.length), ...request.headers },
        signal,
        ...(this.allowPrivateTargets ? {} : { lookup: guardedLookup() }),
      });
      outgoing.on('error', fail);
      outgoing.on('response', (response) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        const done = () => {
          if (settled) return;
          settled = true;
          const retryAfter = response.headers['retry-after'];
          resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter });
        };
        response.on('data', (chunk: Buffer) => {
          if (kept < MAX_ANSWER_BYTES) {
            chunks.push(chunk.subarray(0, MAX_ANSWER_BYTES - kept));
            kept += Math.min(chunk.length, MAX_ANSWER_BYTES - kept);
          }
        });
        response.on('end', done);
        response.on('error', fail);
        response.on('aborted', () => fail(new Error('the answer was cut off')));
      });
      outgoing.end(request.body);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

function describeError(error: unknown): string {
  if (error instanceof PrivateTargetError) return `${error.message} (AUTOMATION_ALLOW_PRIVATE_TARGETS is off)`;
  const failure = error as NodeJS.ErrnoException | undefined;
  const cause = (failure?.cause ?? null) as NodeJS.ErrnoException | null;
  if (cause instanceof PrivateTargetError) return `${cause.message} (AUTOMATION_ALLOW_PRIVATE_TARGETS is off)`;
  const code = failure?.code ?? cause?.code;
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused (ECONNREFUSED)';
    case 'ECONNRESET':
      return 'connection reset (ECONNRESET)';
    case 'ENOTFOUND':
      return 'host not found (ENOTFOUND)';
    case 'EAI_AGAIN':
      return 'host name lookup failed temporarily (EAI_AGAIN)';
    case 'ETIMEDOUT':
      return 'connection timed out (ETIMEDOUT)';
    default:
      return failure?.message ? `${failure.message}${code ? ` (${code})` : ''}` : 'the request failed';
  }
}
