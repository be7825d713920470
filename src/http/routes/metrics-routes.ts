import { createHash, timingSafeEqual } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import { Readable } from 'node:stream';
import { forbidden, unauthorized } from '../../errors/errors.ts';
import type { Metrics } from '../../observability/metrics.ts';
import type { HttpRequest, Route } from '../types.ts';
import { defineRoute, type Guard } from './route-builder.ts';

export interface MetricsRouteDeps {
  metrics: Metrics;
  /** METRICS_TOKEN: when set, /metrics needs `Authorization: Bearer <token>`; when null, only loopback clients get it. */
  token: string | null;
}

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/**
 * Whether an address as uWS gives it is loopback: dotted IPv4 from an IPv4
 * socket, or (listening on "::") the full hexadecimal IPv6 form, where an IPv4
 * client appears IPv4-mapped (0000:…:ffff:7f00:0001); BlockList matches those too.
 */
export function isLoopbackAddress(address: string): boolean {
  const version = isIP(address);
  if (version === 0) return false;
  return loopback.check(address, version === 4 ? 'ipv4' : 'ipv6');
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

function checkAccess(request: HttpRequest, token: Buffer | null): void {
  if (token === null) {
    // A local proxy relaying the world is no loopback client, whether or not it is trusted.
    if (request.viaProxy || !isLoopbackAddress(request.remoteAddress)) throw forbidden('/metrics is only served to loopback clients unless METRICS_TOKEN is set');
    return;
  }
  const match = /^Bearer (.+)$/.exec(request.headers['authorization'] ?? '');
  // Digests have one length, so the comparison takes the same time whatever was presented.
  if (!match || !timingSafeEqual(digest(match[1]!), token)) throw unauthorized('Missing or invalid metrics token');
}

/** GET /metrics: Prometheus text exposition of this instance, behind the metrics token (or loopback). */
export function metricsRoutes(deps: MetricsRouteDeps): Route[] {
  const token = deps.token === null ? null : digest(deps.token);
  const metricsReader: Guard<object> = async (request) => {
    checkAccess(request, token);
    return { caller: {} };
  };
  return [
    defineRoute('GET', '/metrics', metricsReader, async () => {
      const text = Buffer.from(await deps.metrics.render());
      return {
        status: 200,
        headers: { 'Content-Type': deps.metrics.contentType, 'Cache-Control': 'no-store' },
        stream: { body: Readable.from([text]), length: text.length },
      };
    }, 0),
  ];
}
