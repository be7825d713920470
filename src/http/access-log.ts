import type { Logger } from 'pino';
import { isUuid } from '../domain/validation.ts';
import type { CompletedExchange } from './server.ts';

/**
 * The access log: one JSON line per request at `info` (ACCESS_LOG=false turns it off).
 * It names the route pattern, never the path or query: a signed link's signature lives in
 * the query, and keys and secrets only in headers, none of which are logged.
 */
export function accessLogger(logger: Logger): (exchange: CompletedExchange) => void {
  return (exchange) => {
    const { request } = exchange;
    const teamId = request.params['teamId'];
    const line: Record<string, unknown> = {
      requestId: request.id,
      method: request.method,
      route: exchange.route,
      status: exchange.status,
      bytesIn: exchange.bytesIn,
      bytesOut: exchange.bytesOut,
      durationMs: Math.round(exchange.durationMs * 10) / 10,
      teamId: teamId !== undefined && isUuid(teamId) ? teamId : null,
      remoteAddress: request.remoteAddress,
    };
    if (exchange.aborted) line['aborted'] = true;
    const upload = createdMedia(exchange);
    if (upload) Object.assign(line, upload);
    logger.info(line, 'request');
  };
}

/** An upload's media id and stored size: a POST answered 201 with a media record. */
function createdMedia(exchange: CompletedExchange): { mediaId: string; size: number } | null {
  if (exchange.request.method !== 'POST' || exchange.status !== 201) return null;
  const body = exchange.body as { id?: unknown; size?: unknown; path?: unknown } | undefined;
  if (typeof body?.id !== 'string' || typeof body.size !== 'number' || typeof body.path !== 'string') return null;
  return { mediaId: body.id, size: body.size };
}
