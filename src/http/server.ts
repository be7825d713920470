import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
// Sets uWS's header limit in the environment; must come before 'uWebSockets.js' loads its binary.
import { MAX_HEADER_BYTES } from './uws-limits.ts';
import {
  App, us_listen_socket_close, us_socket_local_port,
  type HttpRequest as UwsRequest, type HttpResponse as UwsResponse, type TemplatedApp, type us_listen_socket, type us_socket,
} from 'uWebSockets.js';
import { badRequest, requestHeaderFieldsTooLarge, toServiceError } from '../errors/errors.ts';
import type { ServiceError } from '../errors/service-error.ts';
import { ClientAbortedError, RequestBody, type BodyBuffering } from './request-body.ts';
import type { Cors } from './cors.ts';
import type { Router } from './router.ts';
import type { HttpRequest, HttpResult, StreamBody } from './types.ts';

const STATUS_TEXT: Record<number, string> = {
  200: '200 OK', 201: '201 Created', 204: '204 No Content', 206: '206 Partial Content', 304: '304 Not Modified',
  400: '400 Bad Request', 401: '401 Unauthorized', 402: '402 Payment Required', 403: '403 Forbidden',
  404: '404 Not Found', 405: '405 Method Not Allowed', 408: '408 Request Timeout', 409: '409 Conflict', 413: '413 Payload Too Large',
  415: '415 Unsupported Media Type', 416: '416 Range Not Satisfiable', 429: '429 Too Many Requests', 431: '431 Request Header Fields Too Large',
  500: '500 Internal Server Error', 502: '502 Bad Gateway', 503: '503 Service Unavailable',
};

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

export interface HttpServerOptions {
  router: Router;
  logger: Logger;
  /** Runs before routing; throws to refuse every request, e.g. while starting or draining. */
  admit?: (request: HttpRequest) => void;
  /**
   * Called once per response, just before it is written (not when the client left first):
   * the matched route's pattern (UNROUTED when none), the status, and the error's messageKey.
   */
  onResponse?: (route: string, status: number, messageKey: string | null) => void;
  /** Where bodies keep what arrives while they are paused; unset keeps it all in memory. */
  bodyBuffering?: BodyBuffering;
  /**
   * Turns an error a request failed with into the one to render, before anything unknown becomes
   * a 500: e.g. a database that is down into a 503 (with the original as its cause, for the log).
   */
  mapError?: (error: unknown) => unknown;
  /** Largest request header block (request line, names and values) in bytes; 431 beyond. Default MAX_HEADER_BYTES. */
  maxHeaderBytes?: number;
  /** Answers CORS preflights before routing and adds the CORS headers to every response. */
  cors?: Pick<Cors, 'preflight' | 'withHeaders'>;
  /** Called once per request when it is over: answered (body written or given up) or left by the client. */
  onComplete?: (exchange: CompletedExchange) => void;
}

/** What the access log needs to know of a request once it is over. */
export interface CompletedExchange {
  request: HttpRequest;
  /** The matched route's pattern, UNROUTED or PREFLIGHT. */
  route: string;
  /** Null when the client left before an answer was chosen. */
  status: number | null;
  /** The answer's JSON body, when it had one. */
  body: unknown;
  bytesIn: number;
  bytesOut: number;
  durationMs: number;
  /** The client left before the whole answer was written. */
  aborted: boolean;
}

/** The route of a response that no route produced (refused before routing, 404, 405). */
export const UNROUTED = 'unrouted';
/** The route of a CORS preflight answered before routing. */
export const PREFLIGHT = 'preflight';

/**
 * The uWS boundary: turns each uWS request into an HttpRequest, runs the
 * matched handler, and writes its result or error. Nothing thrown may escape
 * into uWS, and nothing is written to a response after the client left.
 */
export class HttpServer {
  private readonly app: TemplatedApp;
  private listenSocket: us_listen_socket | null = null;
  private readonly router: Router;
  private readonly logger: Logger;
  private readonly admit: (request: HttpRequest) => void;
  private readonly onResponse: (route: string, status: number, messageKey: string | null) => void;
  private readonly bodyBuffering: BodyBuffering | null;
  private readonly mapError: (error: unknown) => unknown;
  private readonly maxHeaderBytes: number;
  private readonly cors: HttpServerOptions['cors'];
  private readonly onComplete: (exchange: CompletedExchange) => void;
  /** Requests between their arrival and the end of their response. */
  private inFlight = 0;
  private onIdle: (() => void) | null = null;

  constructor(options: HttpServerOptions) {
    this.router = options.router;
    this.logger = options.logger;
    this.admit = options.admit ?? (() => undefined);
    this.onResponse = options.onResponse ?? (() => undefined);
    this.bodyBuffering = options.bodyBuffering ?? null;
    this.mapError = options.mapError ?? ((error) => error);
    this.maxHeaderBytes = options.maxHeaderBytes ?? MAX_HEADER_BYTES;
    this.cors = options.cors;
    this.onComplete = options.onComplete ?? (() => undefined);
    this.app = App();
    this.app.any('/*', (res, req) => this.onRequest(res, req));
  }

  async listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.app.listen(host, port, (socket) => {
        if (!socket) {
          reject(new Error(`Cannot listen on ${host}:${port}`));
          return;
        }
        this.listenSocket = socket;
        resolve(us_socket_local_port(socket as unknown as us_socket));
      });
    });
  }

  /** Stops accepting connections; open connections finish on their own. */
  stopListening(): void {
    if (this.listenSocket) {
      us_listen_socket_close(this.listenSocket);
      this.listenSocket = null;
    }
  }

  /** Resolves once every request has written its response, or after `timeoutMs`; true when all did. */
  async idle(timeoutMs: number): Promise<boolean> {
    if (this.inFlight === 0) return true;
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.onIdle = null;
        resolve(false);
      }, timeoutMs);
      this.onIdle = () => {
        clearTimeout(timer);
        this.onIdle = null;
        resolve(true);
      };
    });
  }

  /** Closes every connection at once. */
  close(): void {
    this.stopListening();
    this.app.close();
  }

  private onRequest(res: UwsResponse, req: UwsRequest): void {
    const started = performance.now();
    // Everything from uWS's request object must be read now: it dies when this function returns.
    const method = req.getCaseSensitiveMethod().toUpperCase();
    const path = req.getUrl();
    const rawQuery = req.getQuery() ?? '';
    const query = new URLSearchParams(rawQuery);
    const headers: Record<string, string> = {};
    // The header block's size as sent, near enough: `METHOD /path?query HTTP/1.1`, then `name: value` lines.
    let headerBytes = method.length + path.length + rawQuery.length + 12;
    req.forEach((name, value) => {
      headers[name] = value;
      headerBytes += name.length + value.length + 4;
    });
    const remoteAddress = Buffer.from(res.getRemoteAddressAsText()).toString();
    const suppliedId = headers['x-request-id'];
    const id = suppliedId && REQUEST_ID_PATTERN.test(suppliedId) ? suppliedId : randomUUID();

    const exchange = new Exchange(res, this.logger.child({ requestId: id }));
    const declared = parseContentLength(headers['content-length']);
    const hasBody = (declared.value ?? 0) > 0 || headers['transfer-encoding'] !== undefined;
    const body = new RequestBody(exchange, declared.value, hasBody, this.bodyBuffering);
    res.onAborted(() => {
      exchange.aborted = true;
      exchange.clientLeft = true;
      exchange.controller.abort();
      body.fail(new ClientAbortedError());
    });
    res.onData((chunk, isLast) => {
      // uWS reuses the chunk's memory after this callback returns: push() copies or spools it.
      body.push(new Uint8Array(chunk), isLast);
    });

    const request: HttpRequest = {
      id, method, path, query, headers, params: {}, remoteAddress, body,
      log: exchange.log, signal: exchange.controller.signal,
    };
    this.inFlight++;
    void this.handle(request, exchange, declared.valid, headerBytes).then((answer) => {
      this.onComplete({
        request, route: answer.route, status: answer.result?.status ?? null, body: answer.result?.body,
        bytesIn: body.bytesReceived, bytesOut: exchange.bytesOut, durationMs: performance.now() - started, aborted: exchange.clientLeft,
      });
    }).finally(() => {
      this.inFlight--;
      if (this.inFlight === 0) this.onIdle?.();
    });
  }

  private async handle(
    request: HttpRequest, exchange: Exchange, validLength: boolean, headerBytes: number,
  ): Promise<{ route: string; result: HttpResult | null }> {
    let result: HttpResult;
    let route = UNROUTED;
    let messageKey: string | null = null;
    try {
      if (!validLength) throw badRequest('The Content-Length header is invalid.');
      if (headerBytes > this.maxHeaderBytes) throw requestHeaderFieldsTooLarge(this.maxHeaderBytes);
      // PostgreSQL text cannot hold NUL (a parameter with one fails the query as a protocol error), and no
      // option of ours has a use for it; a NUL can only arrive in a query string as %00.
      if (request.query.size > 0 && hasNul(request.query)) throw badRequest('The query string must not contain NUL characters (%00).');
      const preflight = this.cors?.preflight(request) ?? null;
      if (preflight) {
        route = PREFLIGHT;
        result = preflight;
      } else {
        this.admit(request);
        const match = this.router.match(request.method, request.path);
        route = match.pattern;
        request.params = match.params;
        result = await match.handler(request);
      }
    } catch (error) {
      if (exchange.aborted) return { route, result: null };
      const serviceError = toServiceError(this.mapError(error), request.id);
      this.logFailure(request, serviceError, error);
      messageKey = serviceError.messageKey;
      result = { status: serviceError.status, body: serviceError.toBody(), headers: serviceError.headers };
    }
    if (this.cors) result = { ...result, headers: this.cors.withHeaders(request, result.headers) };
    if (!exchange.aborted) this.onResponse(route, result.status, messageKey);
    await exchange.send(request, result);
    return { route, result };
  }

  private logFailure(request: HttpRequest, serviceError: ServiceError, error: unknown): void {
    if (serviceError.status >= 500 && (serviceError !== error || serviceError.cause !== undefined)) {
      request.log.error({ err: error, method: request.method, path: request.path }, 'request failed');
    } else {
      request.log.debug({ status: serviceError.status, messageKey: serviceError.messageKey }, 'request refused');
    }
  }
}

function hasNul(query: URLSearchParams): boolean {
  for (const [name, value] of query) if (name.includes('\u0000') || value.includes('\u0000')) return true;
  return false;
}

function parseContentLength(value: string | undefined): { value: number | null; valid: boolean } {
  if (value === undefined) return { value: null, valid: true };
  if (!/^\d{1,15}$/.test(value)) return { value: null, valid: false };
  return { value: Number(value), valid: true };
}

/** One request/response pair on the uWS side. */
class Exchange {
  aborted = false;
  /** The client went away (uWS onAborted), as opposed to `aborted`, which also means "answered". */
  clientLeft = false;
  /** Body bytes handed to uWS. */
  bytesOut = 0;
  readonly controller = new AbortController();
  readonly log: Logger;
  private readonly res: UwsResponse;

  constructor(res: UwsResponse, log: Logger) {
    this.res = res;
    this.log = log;
  }

  private paused = false;

  pause(): void {
    if (this.aborted) return;
    this.paused = true;
    this.res.pause();
  }

  resume(): void {
    if (this.aborted) return;
    this.paused = false;
    this.res.resume();
  }

  /** Writes the result; resolves when a streamed body has been written (or given up). */
  async send(request: HttpRequest, result: HttpResult): Promise<void> {
    if (this.aborted) {
      result.stream?.body.destroy?.();
      return;
    }
    if (result.stream) {
      await this.sendStream(request, result, result.stream);
      return;
    }
    const payload = result.body === undefined ? undefined : JSON.stringify(result.body);
    // A body we did not read to the end cannot stay on a keep-alive connection.
    const closeConnection = !request.body.complete;
    if (closeConnection) request.body.discard();
    const res = this.res;
    // A paused socket would never read the next request of a keep-alive connection.
    if (this.paused && !closeConnection) this.resume();
    res.cork(() => {
      res.writeStatus(STATUS_TEXT[result.status] ?? String(result.status));
      res.writeHeader('X-Request-Id', request.id);
      if (payload !== undefined) res.writeHeader('Content-Type', 'application/json; charset=utf-8');
      for (const [name, value] of Object.entries(result.headers ?? {})) res.writeHeader(name, value);
      if (request.method === 'HEAD' || result.status === 204 || result.status === 304) {
        res.endWithoutBody(undefined, closeConnection);
      } else {
        res.end(payload ?? '', closeConnection);
        this.bytesOut = payload === undefined ? 0 : Buffer.byteLength(payload);
      }
    });
    this.aborted = true;
  }

  /**
   * Writes a streamed result with backpressure: status and headers corked,
   * then each chunk through tryEnd (uWS adds Content-Length from the total);
   * when a chunk does not fit, the source is not read again until onWritable
   * has flushed the rest of it. Every write is corked, nothing is written after
   * onAborted, and the source is destroyed when the client leaves.
   */
  private async sendStream(request: HttpRequest, result: HttpResult, stream: StreamBody): Promise<void> {
    const res = this.res;
    const total = stream.length;
    const closeConnection = !request.body.complete;
    if (closeConnection) request.body.discard();
    if (this.paused && !closeConnection) this.resume();
    const bodyless = request.method === 'HEAD' || total === 0 || result.status === 204 || result.status === 304;
    res.cork(() => {
      res.writeStatus(STATUS_TEXT[result.status] ?? String(result.status));
      res.writeHeader('X-Request-Id', request.id);
      for (const [name, value] of Object.entries(result.headers ?? {})) {
        if (name.toLowerCase() !== 'content-length') res.writeHeader(name, value);
      }
      if (bodyless) {
        if (request.method === 'HEAD') res.endWithoutBody(total, closeConnection);
        else res.end('', closeConnection);
      }
    });
    if (bodyless) {
      this.aborted = true;
      stream.body.destroy?.();
      return;
    }
    await this.pump(stream, total);
  }

  private async pump(stream: StreamBody, total: number): Promise<void> {
    const res = this.res;
    const source = stream.body;
    let finished = false;
    // The chunk uWS could not take whole, waiting for onWritable. One handler for the whole response:
    // uWS keeps calling the handler it has, so per-chunk handlers would see chunks long sent.
    let pending: { chunk: Buffer; start: number; resolve: (done: boolean) => void } | null = null;
    res.onWritable((offset) => {
      const current = pending;
      if (!current || this.aborted) return true;
      let retried: [boolean, boolean] = [false, false];
      res.cork(() => {
        retried = res.tryEnd(current.chunk.subarray(Math.min(offset - current.start, current.chunk.length)), total);
      });
      if (retried[0] || retried[1]) {
        pending = null;
        current.resolve(retried[1]);
      }
      return retried[0];
    });
    const onClientGone = () => {
      source.destroy?.();
      const current = pending;
      pending = null;
      current?.resolve(false);
    };
    this.controller.signal.addEventListener('abort', onClientGone, { once: true });
    try {
      for await (const chunk of source) {
        if (this.aborted || finished) break;
        let ok = false;
        let start = 0;
        res.cork(() => {
          start = res.getWriteOffset();
          [ok, finished] = res.tryEnd(chunk, total);
        });
        if (finished || ok) {
          this.bytesOut += chunk.length;
          continue;
        }
        // Backpressure: uWS took part of the chunk (or none); the source is not read again until onWritable sent the rest.
        finished = await new Promise<boolean>((resolve) => {
          pending = { chunk, start, resolve };
        });
        if (!this.clientLeft) this.bytesOut += chunk.length;
      }
    } catch (error) {
      if (!this.aborted) this.log.error({ err: error }, 'reading the response body failed');
    } finally {
      this.controller.signal.removeEventListener('abort', onClientGone);
      if (!finished && !this.aborted) {
        // Headers promised `total` bytes that will never come: the client must see a broken response, not a short one.
        this.log.error({ sent: res.getWriteOffset(), total }, 'response body ended early; closing the connection');
        this.aborted = true;
        res.close();
      }
      this.aborted = true;
      source.destroy?.();
    }
  }
}
