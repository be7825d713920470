import { json, type Route } from '../types.ts';

/** GET /: where to go next, for someone who opened the service's address. */
export function rootRoutes(): Route[] {
  return [
    {
      method: 'GET',
      pattern: '/',
      handler: () =>
        json(200, {
          service: 'media-upload-service',
          docs: '/docs',
          openapi: '/v1/openapi.json',
          health: '/healthz',
        }),
    },
  ];
}
