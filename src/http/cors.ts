import type { CorsOrigins } from '../config/cors-origins.ts';
import type { HttpRequest, HttpResult } from './types.ts';

/**
 * CORS for browsers and in-game browsers (FiveM's NUI pages call from origins such as
 * `https://cfx-nui-screenshot-basic`). The API authenticates with headers, never with
 * cookies, so no credentials mode: `*` is safe as the default.
 */

const ALLOWED_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';

const ALLOWED_HEADERS = [
  'Authorization', 'Content-Type', 'pageNumber', 'pageSize', 'Idempotency-Key', 'X-Request-Id', 'authSecret', 'Range', 'If-None-Match',
  'Tus-Resumable', 'Upload-Length', 'Upload-Offset', 'Upload-Metadata', 'Upload-Defer-Length', 'Upload-Concat',
].join(', ');

const EXPOSED_HEADERS = [
  'Retry-After', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset',
  'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'X-Request-Id', 'Location',
  'pageNumber', 'pageSize', 'Idempotent-Replayed', 'Media-Id', 'Content-Disposition', 'Content-Range', 'ETag',
  'Upload-Offset', 'Upload-Length', 'Upload-Expires', 'Upload-Metadata', 'Upload-Defer-Length',
  'Tus-Resumable', 'Tus-Version', 'Tus-Extension', 'Tus-Max-Size', 'Tus-Checksum-Algorithm',
].join(', ');

/** Browsers cap it anyway (Chromium at 2 h); 10 minutes keeps a changed CORS_ORIGINS quick to take effect. */
const MAX_AGE_SECONDS = '600';

export class Cors {
  private readonly origins: CorsOrigins;

  constructor(origins: CorsOrigins) {
    this.origins = origins;
  }

  get enabled(): boolean {
    return this.origins === '*' || this.origins.length > 0;
  }

  /** The answer to a preflight (OPTIONS with Origin and Access-Control-Request-Method); null for any other request. */
  preflight(request: HttpRequest): HttpResult | null {
    if (!this.enabled || request.method !== 'OPTIONS') return null;
    const origin = request.headers['origin'];
    if (origin === undefined || request.headers['access-control-request-method'] === undefined) return null;
    const headers: Record<string, string> = this.varyHeader();
    // An origin not allowed gets a plain 204: without Access-Control-Allow-Origin the browser blocks the request.
    if (this.allows(origin)) {
      Object.assign(headers, {
        'Access-Control-Allow-Origin': this.allowOriginValue(origin),
        'Access-Control-Allow-Methods': ALLOWED_METHODS,
        'Access-Control-Allow-Headers': ALLOWED_HEADERS,
        'Access-Control-Max-Age': MAX_AGE_SECONDS,
      });
    }
    return { status: 204, headers };
  }

  /** `headers` plus the CORS headers every answer to an allowed origin carries (errors and served files included). */
  withHeaders(request: HttpRequest, headers: Record<string, string> | undefined): Record<string, string> | undefined {
    if (!this.enabled) return headers;
    const origin = request.headers['origin'];
    const added: Record<string, string> = this.varyHeader();
    if (origin !== undefined && this.allows(origin)) {
      added['Access-Control-Allow-Origin'] = this.allowOriginValue(origin);
      added['Access-Control-Expose-Headers'] = EXPOSED_HEADERS;
    }
    if (Object.keys(added).length === 0) return headers;
    const merged: Record<string, string> = { ...headers };
    for (const [name, value] of Object.entries(added)) {
      const existing = Object.keys(merged).find((key) => key.toLowerCase() === name.toLowerCase());
      if (existing === undefined) merged[name] = value;
      else if (name === 'Vary' && !/\borigin\b/i.test(merged[existing]!)) merged[existing] = `${merged[existing]}, ${value}`;
      // Otherwise the route set it itself (a preflight's own headers): keep the route's.
    }
    return merged;
  }

  private allows(origin: string): boolean {
    return this.origins === '*' || this.origins.includes(origin.toLowerCase());
  }

  private allowOriginValue(origin: string): string {
    return this.origins === '*' ? '*' : origin;
  }

  /** With a list, the answer depends on the Origin: caches must keep one copy per origin. */
  private varyHeader(): Record<string, string> {
    return this.origins === '*' ? {} : { Vary: 'Origin' };
  }
}
