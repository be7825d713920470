import { json, type Route } from '../types.ts';
import { publicRouteBuilder } from './route-builder.ts';

/** GET /: where to go next, for someone who opened the service's address. */
export function rootRoutes(): Route[] {
  const route = publicRouteBuilder();
  return [
    route('GET', '/', () =>
      json(200, {
        service: 'media-upload-service',
        docs: '/docs',
        openapi: '/v1/openapi.json',
        health: '/healthz',
      })),
  ];
}
