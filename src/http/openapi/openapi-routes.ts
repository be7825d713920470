import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { notFound } from '../../errors/errors.ts';
import type { HttpRequest, HttpResult, Route } from '../types.ts';
import { publicRouteBuilder } from '../routes/route-builder.ts';
import { openApiDocument } from './document.ts';

/**
 * GET /v1/openapi.json, and GET /docs: Swagger UI rendering it, served from
 * the swagger-ui-dist package in node_modules (no CDN). The page loads only
 * files of this service: no inline script, so the Content-Security-Policy
 * allows scripts from 'self' alone (Swagger UI sets style attributes, hence
 * 'unsafe-inline' for styles, and its icons are data: images).
 */

const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Relative links keep the page working behind a path prefix. `/docs` resolves `docs/x` to /docs/x;
 * `/docs/` (the same page, as people type it too) resolves `x` there.
 */
function page(assetBase: 'docs/' | ''): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Media upload service API</title>
<link rel="stylesheet" href="${assetBase}swagger-ui.css">
<link rel="icon" type="image/png" href="${assetBase}favicon-32x32.png" sizes="32x32">
</head>
<body>
<div id="swagger-ui"></div>
<script src="${assetBase}swagger-ui-bundle.js"></script>
<script src="${assetBase}docs-page.js"></script>
</body>
</html>
`;
}

// validatorUrl null: Swagger UI would otherwise send the document to validator.swagger.io.
// The document's address from this script's own (/docs/docs-page.js), whichever page (/docs or /docs/) loaded it.
const PAGE_SCRIPT = `window.ui = SwaggerUIBundle({
  url: new URL('../v1/openapi.json', document.currentScript.src).href,
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  tryItOutEnabled: false,
});
`;

interface Asset {
  contentType: string;
  /** A file of swagger-ui-dist, or the content itself. */
  source: { file: string } | { text: string };
}

const ASSETS: Record<string, Asset> = {
  'swagger-ui.css': { contentType: 'text/css; charset=utf-8', source: { file: 'swagger-ui.css' } },
  'swagger-ui-bundle.js': { contentType: 'text/javascript; charset=utf-8', source: { file: 'swagger-ui-bundle.js' } },
  'favicon-32x32.png': { contentType: 'image/png', source: { file: 'favicon-32x32.png' } },
  'favicon-16x16.png': { contentType: 'image/png', source: { file: 'favicon-16x16.png' } },
  'docs-page.js': { contentType: 'text/javascript; charset=utf-8', source: { text: PAGE_SCRIPT } },
};

interface Loaded {
  plain: Buffer;
  gzip: Buffer;
}

function swaggerUiDirectory(): string {
  return dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
}

/** Each asset read (and gzipped) once, on first request. */
const loaded = new Map<string, Promise<Loaded>>();

function load(name: string, asset: Asset): Promise<Loaded> {
  let entry = loaded.get(name);
  if (!entry) {
    entry = (async () => {
      const plain = 'text' in asset.source ? Buffer.from(asset.source.text) : await readFile(join(swaggerUiDirectory(), asset.source.file));
      return { plain, gzip: gzipSync(plain) };
    })();
    entry.catch(() => loaded.delete(name));
    loaded.set(name, entry);
  }
  return entry;
}

function acceptsGzip(request: HttpRequest): boolean {
  return /\bgzip\b/i.test(request.headers['accept-encoding'] ?? '');
}

function send(request: HttpRequest, content: Loaded, headers: Record<string, string>): HttpResult {
  const gzip = acceptsGzip(request) && content.gzip.length < content.plain.length;
  const body = gzip ? content.gzip : content.plain;
  return {
    status: 200,
    headers: { ...headers, 'X-Content-Type-Options': 'nosniff', Vary: 'Accept-Encoding', ...(gzip && { 'Content-Encoding': 'gzip' }) },
    stream: { body: Readable.from([body]), length: body.length },
  };
}

function compressed(text: string): Loaded {
  const plain = Buffer.from(text);
  return { plain, gzip: gzipSync(plain) };
}

const pages: Record<'docs/' | '', Loaded | null> = { 'docs/': null, '': null };

/** `publicUrl` (PUBLIC_URL) is the document's `servers` entry. */
export function openApiRoutes(options: { publicUrl: string }): Route[] {
  const route = publicRouteBuilder();
  let documentContent: Loaded | null = null;
  return [
    route('GET', '/v1/openapi.json', ({ request }) => {
      documentContent ??= compressed(openApiDocument(options.publicUrl).json);
      return send(request, documentContent, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-cache' });
    }),
    // The router matches /docs/ here too (a trailing slash is ignored).
    route('GET', '/docs', ({ request }) => {
      const assetBase = request.path.endsWith('/') ? '' : 'docs/';
      const content = (pages[assetBase] ??= compressed(page(assetBase)));
      return send(request, content, {
        'Content-Type': 'text/html; charset=utf-8',
        'Cache-Control': 'no-cache',
        'Content-Security-Policy': CONTENT_SECURITY_POLICY,
        'Referrer-Policy': 'no-referrer',
      });
    }),
    route('GET', '/docs/:asset', async ({ param, request }) => {
      const name = param('asset');
      const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name]! : null;
      if (!asset) throw notFound('asset', name);
      return send(request, await load(name, asset), { 'Content-Type': asset.contentType, 'Cache-Control': 'public, max-age=3600' });
    }),
  ];
}
