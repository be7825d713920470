import { z } from 'zod';
import { binary, text, type OperationDoc } from './operation-doc.ts';
import { healthSchema } from './schemas.ts';

/** The service's own routes: where to start, health, metrics and this description. */

const jsonObject = z.record(z.string(), z.unknown());

const dashboardPage: Omit<OperationDoc, 'operationId'> = {
  summary: 'The web dashboard',
  description: 'The dashboard\'s page (docs/dashboard.md): every view\'s address answers it, and the page shows that view. '
    + 'No authentication: the page signs in by calling the API. Strict Content-Security-Policy; brotli or gzip as accepted; ETag.',
  tag: 'service',
  access: 'public',
  responses: {
    200: { description: 'The page.', content: { 'text/html': text('HTML') } },
    304: { description: 'Not modified (If-None-Match matched the ETag).' },
  },
  errors: {},
};

export const serviceOperations: Record<string, OperationDoc> = {
  'GET /': {
    operationId: 'root',
    summary: 'Where to start',
    description: 'Points to the human-readable documentation (/docs), this document (/v1/openapi.json), /healthz and the dashboard (/app). '
      + 'A browser (`Accept` naming text/html) is sent to the dashboard instead.',
    tag: 'service',
    access: 'public',
    responses: {
      200: {
        description: 'Links.',
        schema: z.object({ service: z.string(), docs: z.string(), openapi: z.string(), health: z.string(), dashboard: z.string() }),
      },
      302: { description: 'To /app, for a browser.', headers: z.object({ Location: z.string().meta({ description: '/app' }) }) },
    },
    errors: {},
  },
  'GET /healthz': {
    operationId: 'health',
    summary: 'Health',
    description: '200 once the service accepts requests; 503 while it starts or drains, or while a dependency (the database, the storage) is down: then `value` names the dependencies that are down and `message` says why.',
    tag: 'service',
    access: 'public',
    responses: { 200: { description: 'Ready.', schema: healthSchema } },
    errors: {},
  },
  'GET /metrics': {
    operationId: 'metrics',
    summary: 'Prometheus metrics of this instance',
    description: 'With METRICS_TOKEN set, needs it as a bearer token; without, only loopback clients get it.',
    tag: 'service',
    access: 'metricsToken',
    responses: { 200: { description: 'Prometheus text exposition.', content: { 'text/plain': text('Prometheus text format 0.0.4.') } } },
    errors: { 401: 'Missing or wrong metrics token.', 403: 'No METRICS_TOKEN set and the client is not on loopback.' },
  },
  'GET /v1/openapi.json': {
    operationId: 'openApiDocument',
    summary: 'This API description (OpenAPI 3.1)',
    tag: 'service',
    access: 'public',
    responses: { 200: { description: 'The document.', schema: jsonObject } },
    errors: {},
  },
  'GET /docs': {
    operationId: 'docsPage',
    summary: 'This API description as a page',
    tag: 'service',
    access: 'public',
    responses: { 200: { description: 'An HTML page rendering /v1/openapi.json.', content: { 'text/html': text('HTML') } } },
    errors: {},
  },
  'GET /docs/:asset': {
    operationId: 'docsAsset',
    summary: 'Scripts and styles of the documentation page',
    tag: 'service',
    access: 'public',
    responses: {
      200: {
        description: 'The asset.',
        content: { 'text/javascript': text('JavaScript'), 'text/css': text('CSS'), 'image/png': binary() },
      },
    },
    errors: { 404: 'No such asset.' },
  },
  'GET /app': { operationId: 'dashboardPage', ...dashboardPage },
  'GET /app/:view': { operationId: 'dashboardView', ...dashboardPage },
  'GET /app/:view/:item': { operationId: 'dashboardItemView', ...dashboardPage },
  'GET /app/:view/:item/:detail': { operationId: 'dashboardDetailView', ...dashboardPage },
  'GET /app/assets/:asset': {
    operationId: 'dashboardAsset',
    summary: 'Modules and styles of the dashboard',
    tag: 'service',
    access: 'public',
    responses: {
      200: { description: 'The file.', content: { 'text/javascript': text('JavaScript'), 'text/css': text('CSS') } },
      304: { description: 'Not modified (If-None-Match matched the ETag).' },
    },
    errors: { 404: 'No such file.' },
  },
  'GET /app/vendor/:asset': {
    operationId: 'dashboardLibrary',
    summary: 'The libraries the dashboard imports (Preact, htm, tus-js-client), as their packages ship them',
    tag: 'service',
    access: 'public',
    responses: {
      200: { description: 'The file.', content: { 'text/javascript': text('JavaScript') } },
      304: { description: 'Not modified (If-None-Match matched the ETag).' },
    },
    errors: { 404: 'No such file.' },
  },
};
