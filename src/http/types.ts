import type { Logger } from 'pino';
import type { RequestBody } from './request-body.ts';

export type HttpMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';

/** A request as handlers see it: plain data, nothing of the web framework. */
export interface HttpRequest {
  id: string;
  method: string;
  path: string;
  query: URLSearchParams;
  /** Header names in lower case. */
  headers: Record<string, string>;
  params: Record<string, string>;
  /** The client's address: the socket's, or behind a trusted proxy the one it forwarded (TRUSTED_PROXIES). */
  remoteAddress: string;
  /** The request named a proxy between the client and us (Forwarded or X-Forwarded-For, trusted or not). */
  viaProxy: boolean;
  body: RequestBody;
  log: Logger;
  /** Fires when the client goes away before the response is sent. */
  signal: AbortSignal;
}

/** A response body streamed with backpressure; the server sets Content-Length from `length`. */
export interface StreamBody {
  /** Read only as fast as the client takes it; destroyed when the client leaves or the response ends early. */
  body: AsyncIterable<Buffer> & { destroy?(): void };
  /** Exactly the number of bytes `body` yields. */
  length: number;
}

export interface HttpResult {
  status: number;
  /** Serialised as JSON; omitted for an empty response. Ignored when `stream` is set. */
  body?: unknown;
  headers?: Record<string, string>;
  /** A streamed body instead of JSON (HEAD: only its length is announced, the source is not read). */
  stream?: StreamBody;
}

export type Handler = (request: HttpRequest) => Promise<HttpResult> | HttpResult;

export interface Route {
  method: HttpMethod;
  /** Segments starting with ':' are parameters, e.g. '/v1/cdn/media/:teamId'. */
  pattern: string;
  handler: Handler;
}

export function json(status: number, body: unknown, headers?: Record<string, string>): HttpResult {
  return { status, body, headers };
}

export function noContent(): HttpResult {
  return { status: 204 };
}
