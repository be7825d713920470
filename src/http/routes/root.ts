import { json, type Route } from '../types.ts';
import { publicRouteBuilder } from './route-builder.ts';

/**
 * A browser asks for a page (`Accept: text/html`); API clients (curl, fetch, SDKs) send `*\/*` or
 * `application/json` and keep getting the links.
 */
function wantsPage(accept: string | undefined): boolean {
  return /\btext\/html\b/i.test(accept ?? '');
}

/** GET /: where to go next, for someone who opened the service's address. A browser goes to the dashboard. */
export function rootRoutes(): Route[] {
  const route = publicRouteBuilder();
  return [
    route('GET', '/', ({ request }) =>
      wantsPage(request.headers['accept'])
        ? { status: 302, headers: { Location: '/app', Vary: 'Accept', 'Cache-Control': 'no-cache' } }
        : json(200, {
          service: 'media-upload-service',
          docs: '/docs',
          openapi: '/v1/openapi.json',
          health: '/healthz',
          dashboard: '/app',
        }, { Vary: 'Accept' })),
  ];
}
