import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
// Sets uWS's header limit in the environment; must come before 'uWebSockets.js' loads its binary.
import { MAX_HEADER_BYTES } from './uws-limits.ts';
import {
  App, us_listen_socket_close, us_socket_local_port,
  type HttpRequest as UwsRequest, type HttpResponse as UwsResponse, type ListenOptions, type TemplatedApp, type us_listen_socket, type us_socket,
} from 'uWebSockets.js';
import { badRequest, requestHeaderFieldsTooLarge, toServiceError } from '../errors/errors.ts';
import type { ServiceError } from '../errors/service-error.ts';
import { afterAnswer, closedAfterAnswer, requestFraming, responseFraming, type AfterAnswer } from './framing.ts';
import { LingeringClose } from './lingering-close.ts';
import { ClientAbortedError, RequestBody, type BodyBuffering, type BodySource } from './request-body.ts';
import type { Cors } from './cors.ts';
import { clientAddress, compileTrustedProxies, type TrustedProxies } from './client-address.ts';
import type { Router } from './router.ts';
import type { HttpRequest, HttpResult, StreamBody } from './types.ts';

const STATUS_TEXT: Record<number, string> = {
  200: '200 OK', 201: '201 Created', 204: '204 No Content', 206: '206 Partial Content', 304: '304 Not Modified',
  400: '400 Bad Request', 401: '401 Unauthorized', 402: '402 Payment Required', 403: '403 Forbidden',
  404: '404 Not Found', 405: '405 Method Not Allowed', 408: '408 Request Timeout', 409: '409 Conflict', 412: '412 Precondition Failed', 413: '413 Payload Too Large',
  415: '415 Unsupported Media Type', 416: '416 Range Not Satisfiable', 422: '422 Unprocessable Entity', 423: '423 Locked', 429: '429 Too Many Requests',
  431: '431 Request Header Fields Too Large',
  500: '500 Internal Server Error', 502: '502 Bad Gateway', 503: '503 Service Unavailable',
};

/**
 * uSockets sets SO_REUSEPORT on every listen socket unless told otherwise, so on Linux a second
 * process listening on the same port would silently get a share of the connections. The values
 * are those of the declarations' ListenOptions enum, which the runtime module does not export.
 */
const LISTEN_EXCLUSIVE_PORT: ListenOptions.LIBUS_LISTEN_EXCLUSIVE_PORT = 1;
const LISTEN_SHARED_PORT: ListenOptions.LIBUS_LISTEN_DEFAULT = 0;

/** How the listen socket treats other sockets on the same address. */
export interface ListenMode {
  /**
   * false (default): the port is this process's alone; listening fails while anything else
   * listens on it, and anything else fails while we do. true: SO_REUSEPORT, the kernel spreads
   * new connections over every process listening with it (HTTP_PROCESSES > 1).
   */
  shared?: boolean;
}

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
  /** TRUSTED_PROXIES: connections from these name their client in Forwarded / X-Forwarded-For. */
  trustedProxies?: readonly string[];
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
  private readonly trustedProxies: TrustedProxies | null;
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
    this.trustedProxies = compileTrustedProxies(options.trustedProxies ?? []);
    this.app = App();
    this.app.any('/*', (res, req) => this.onRequest(res, req));
  }

  async listen(host: string, port: number, mode: ListenMode = {}): Promise<number> {
    // uWS takes (host, port, options, callback) as well; the declarations list options only without a host.
    const listen = this.app.listen as unknown as (
      host: string, port: number, options: ListenOptions, cb: (socket: us_listen_socket | false) => void,
    ) => TemplatedApp;
    return new Promise((resolve, reject) => {
      listen.call(this.app, host, port, mode.shared ? LISTEN_SHARED_PORT : LISTEN_EXCLUSIVE_PORT, (socket) => {
        if (!socket) {
          reject(new Error(`Cannot listen on ${host}:${port} (another process listens there, or the address is not this machine's)`));
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
    // Every field as sent, duplicates included: two Content-Length fields must not hide behind one.
    const fields: Array<[string, string]> = [];
    // The header block's size as sent, near enough: `METHOD /path?query HTTP/1.1`, then `name: value` lines.
    let headerBytes = method.length + path.length + rawQuery.length + 12;
    req.forEach((name, value) => {
      headers[name] = value;
      fields.push([name, value]);
      headerBytes += name.length + value.length + 4;
    });
    const client = clientAddress(Buffer.from(res.getRemoteAddressAsText()).toString(), fields, this.trustedProxies);
    const suppliedId = headers['x-request-id'];
    const id = suppliedId && REQUEST_ID_PATTERN.test(suppliedId) ? suppliedId : randomUUID();

    const framing = requestFraming(fields);
    const exchange = new Exchange(res, this.logger.child({ requestId: id }), framing.valid, closedAfterAnswer(fields));
    // A body whose framing is refused is never read: it counts as one that has not arrived yet.
    const hasBody = framing.valid ? (framing.contentLength ?? 0) > 0 || framing.chunked : true;
    const body = new RequestBody(exchange, framing.valid ? framing.contentLength : null, hasBody, this.bodyBuffering);
    res.onAborted(() => {
      exchange.left();
      body.fail(new ClientAbortedError());
    });
    const request: HttpRequest = {
      id, method, path, query, headers, params: {}, remoteAddress: client.address, viaProxy: client.viaProxy, body,
      log: exchange.log, signal: exchange.controller.signal,
    };
    this.inFlight++;
    let handling = false;
    const handle = () => {
      if (handling) return;
      handling = true;
      const handled = exchange.aborted ? Promise.resolve(null) : this.handle(request, exchange, framing.valid ? null : framing.reason, headerBytes);
      void handled.then((answer) => {
        if (answer === null) return;
        this.onComplete({
          request, route: answer.route, status: answer.result?.status ?? null, body: answer.result?.body,
          bytesIn: body.bytesReceived, bytesOut: exchange.bytesOut, durationMs: performance.now() - started, aborted: exchange.clientLeft,
        });
      }).finally(() => {
        body.releaseUnread();
        this.inFlight--;
        if (this.inFlight === 0) this.onIdle?.();
      });
    };
    // A body framed by Content-Length that goes on past a chunk filled the rest of uWS's read: no
    // request can be pipelined behind it there, so its request may be handled at once. Only a body
    // larger than what one body may hold in memory is: the others never reach the spool, and the
    // screenshot burst measured no better (and 50 MB more RSS) when all were.
    const memoryBytes = this.bodyBuffering?.memoryBytes ?? Infinity;
    const startsEarly = framing.valid && !framing.chunked && (framing.contentLength ?? 0) > memoryBytes;
    res.onData((chunk, isLast) => {
      // uWS reuses the chunk's memory after this callback returns: push() copies or spools it.
      body.push(new Uint8Array(chunk), isLast);
      exchange.bodyArrived(isLast);
      if (!isLast && startsEarly && !handling) queueMicrotask(handle);
    });
    if (!hasBody) exchange.holdUntilAnswered();
    // Otherwise handled once uWS has parsed everything that arrived with this request. A pipelined
    // request in the same read makes uWS close the connection (it serves one request at a time), and
    // onAborted has then fired: such a request is dropped before anything of it is done, rather than
    // done with its answer lost. setImmediate waits for every socket the loop has ready, though: under
    // load that took tens of ms, long enough for a near client's large body to reach the spool before
    // its upload started (docs/performance.md).
    setImmediate(handle);
  }

  private async handle(
    request: HttpRequest, exchange: Exchange, framingError: string | null, headerBytes: number,
  ): Promise<{ route: string; result: HttpResult | null }> {
    let result: HttpResult;
    let route = UNROUTED;
    let messageKey: string | null = null;
    try {
      if (framingError !== null) throw badRequest(framingError);
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

/**
 * uWS closes a connection whose request body arrives slower than 16 KiB/s: its 10 s timer is only
 * re-armed per 160 KiB received (HttpContext.h, HTTP_RECEIVE_THROUGHPUT_BYTES, compiled in). Its
 * pause() disarms that timer and resume() arms it for 10 s afresh, so a body that keeps arriving
 * re-arms it through them, at most this often; a body that stops arriving is answered 408 by the
 * upload's own idle timer (UPLOAD_IDLE_TIMEOUT_SECONDS, below 10 s) or closed by uWS after 10 s.
 */
const REARM_INTERVAL_MS = 1000;

/** One request/response pair on the uWS side; also the transport its RequestBody pauses and resumes. */
class Exchange implements BodySource {
  /**
   * The client left, or the answer has been written: `res` must not be touched any more, except by
   * a lingering close (`lingering`), which ends the answer later.
   */
  aborted = false;
  /** The client went away (uWS onAborted), as opposed to `aborted`, which also means "answered". */
  clientLeft = false;
  /** Body bytes handed to uWS. */
  bytesOut = 0;
  readonly controller = new AbortController();
  readonly log: Logger;
  private readonly res: UwsResponse;
  /** False when the request's body framing was refused: nothing more is read from this connection. */
  private readonly framingTrusted: boolean;
  /** uWS closes the connection as soon as the answer ends (the request asked it to: closedAfterAnswer). */
  private readonly closedByUws: boolean;
  /** Set while an early answer reads and discards the rest of the body before ending (AfterAnswer `linger`). */
  private lingering: LingeringClose | null = null;
  /** The body asked for a pause (backpressure, or not consumed yet). */
  private bodyPaused = false;
  /**
   * The request has arrived whole and waits for its answer: the socket is not read meanwhile, so a
   * pipelined request stays in the kernel until then (uWS closes a connection on which a request
   * arrives while another is unanswered).
   */
  private holding = false;
  private socketPaused = false;
  private lastRearm = 0;

  constructor(res: UwsResponse, log: Logger, framingTrusted: boolean, closedByUws: boolean) {
    this.res = res;
    this.log = log;
    this.framingTrusted = framingTrusted;
    this.closedByUws = closedByUws;
  }

  /** The client went away (uWS onAborted): `res` must not be touched any more. */
  left(): void {
    this.aborted = true;
    this.clientLeft = true;
    this.lingering?.cancel();
    this.lingering = null;
    this.controller.abort();
  }

  /** A chunk of the body arrived (already handed to the RequestBody); `isLast` when the body is over. */
  bodyArrived(isLast: boolean): void {
    if (this.lingering) {
      this.rearmTimeout();
      this.lingering.arrived(isLast);
    } else if (isLast) {
      this.holdUntilAnswered();
    } else {
      this.bodyProgressed();
    }
  }

  pause(): void {
    this.bodyPaused = true;
    this.applyPause();
  }

  resume(): void {
    this.bodyPaused = false;
    this.applyPause();
  }

  holdUntilAnswered(): void {
    this.holding = true;
    this.applyPause();
  }

  /** A chunk of the body arrived: keeps uWS from closing a slow but steady upload (REARM_INTERVAL_MS). */
  private bodyProgressed(): void {
    if (this.aborted || this.socketPaused) return;
    this.rearmTimeout();
  }

  private rearmTimeout(): void {
    const now = performance.now();
    if (now - this.lastRearm < REARM_INTERVAL_MS) return;
    this.lastRearm = now;
    this.res.pause();
    this.res.resume();
  }

  private applyPause(): void {
    if (this.aborted) return;
    const paused = this.bodyPaused || this.holding;
    if (paused === this.socketPaused) return;
    this.socketPaused = paused;
    if (paused) this.res.pause();
    else this.res.resume();
  }

  /**
   * Settles the connection before the answer is written (see AfterAnswer): an unread body is
   * discarded, and the socket is resumed to serve the next request or drain the body, or left paused.
   * `linger` and `close` need an answer with a body (written, then ended later; or ended with
   * uWS's closeConnection): without one, the keep-alive rules apply, and untrusted framing is held.
   */
  private prepareAnswer(request: HttpRequest, sendsBody: boolean): AfterAnswer {
    let after = afterAnswer(request.body, this.framingTrusted, this.closedByUws && sendsBody);
    if (after === 'close' && !sendsBody) after = 'hold';
    if (after !== 'keep-alive') request.body.discard();
    this.holding = false;
    this.bodyPaused = after === 'hold' || after === 'close';
    this.applyPause();
    return after;
  }

  /** Status, X-Request-Id, the result's headers and `Connection: close` when the body was not read. */
  private writeHead(request: HttpRequest, result: HttpResult, after: AfterAnswer, contentType: string | null): void {
    const res = this.res;
    res.writeStatus(STATUS_TEXT[result.status] ?? String(result.status));
    res.writeHeader('X-Request-Id', request.id);
    if (contentType !== null) res.writeHeader('Content-Type', contentType);
    for (const [name, value] of Object.entries(result.headers ?? {})) {
      const lower = name.toLowerCase();
      if (lower !== 'content-length' && lower !== 'connection') res.writeHeader(name, value);
    }
    // uWS's own closeConnection flag is used only for `close`: it closes the socket as soon as the answer
    // is written, and a client still sending its body then meets a reset that can cost it the answer.
    // With it, uWS writes `Connection: close` itself unless the request asked to close.
    if (after !== 'keep-alive' && (after !== 'close' || this.closedByUws)) res.writeHeader('Connection', 'close');
  }

  /** Ends an answer that has no body; its Content-Length, if any, is written here, not by uWS. */
  private endWithoutBody(contentLength: number | null): void {
    // uWS's endWithoutBody(length) leaves the response pending (the next request on the connection
    // then closes it), and endWithoutBody(undefined, ...) announces 2^63 bytes: neither is used.
    if (contentLength !== null) this.res.writeHeader('Content-Length', String(contentLength));
    this.res.endWithoutBody();
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
    const framing = responseFraming(request.method, result.status, payload === undefined ? null : Buffer.byteLength(payload));
    const after = this.prepareAnswer(request, framing.sendsBody && payload !== undefined && payload.length > 0);
    const res = this.res;
    res.cork(() => {
      this.writeHead(request, result, after, payload === undefined ? null : 'application/json; charset=utf-8');
      if (after === 'linger') {
        // Sent whole now, as one chunk of a chunked answer; its end waits for the lingering close.
        res.write(payload!);
        this.bytesOut = Buffer.byteLength(payload!);
      } else if (framing.sendsBody) {
        res.end(payload ?? '', after === 'close');
        this.bytesOut = payload === undefined ? 0 : Buffer.byteLength(payload);
      } else {
        this.endWithoutBody(framing.contentLength);
      }
    });
    this.aborted = true;
    if (after === 'linger') this.lingering = new LingeringClose(() => this.endLingering());
  }

  /**
   * Ends a lingering answer: uWS writes its last chunk and, as the request asked, closes the
   * connection (cleanly once the whole body was read).
   */
  private endLingering(): void {
    this.lingering = null;
    try {
      this.res.cork(() => this.res.end());
    } catch (error) {
      // uWS let go of the response without telling (onAborted): nothing is left to end.
      this.log.debug({ err: error }, 'ending a lingering answer failed');
    }
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
    const framing = responseFraming(request.method, result.status, total);
    // A streamed answer is not written for a lingering close (its end is the stream's).
    const after = this.prepareAnswer(request, false);
    const bodyless = !framing.sendsBody || total === 0;
    res.cork(() => {
      this.writeHead(request, result, after, null);
      if (!framing.sendsBody) this.endWithoutBody(framing.contentLength);
      else if (total === 0) res.end('');
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
