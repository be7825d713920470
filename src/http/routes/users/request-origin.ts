import type { HttpRequest } from '../../types.ts';

/** Where a sign-in came from, as its session records it. */
export function requestOrigin(request: HttpRequest): { ip: string; userAgent: string | null } {
  return { ip: request.remoteAddress, userAgent: request.headers['user-agent'] ?? null };
}
