import { Readable } from 'node:stream';
import { notFound } from '../../errors/errors.ts';
import type { HttpRequest, HttpResult, Route } from '../types.ts';
import { publicRouteBuilder } from '../routes/route-builder.ts';
import { loadDashboardAssets, VENDOR_BASE } from './dashboard-assets.ts';
import { dashboardHeaders } from './dashboard-headers.ts';
import { staticImportClosure } from './static-imports.ts';
import { dashboardPage } from './dashboard-page.ts';
import { chooseEncoding, encodedBody, etagOf, staticAsset, type StaticAsset } from './static-asset.ts';

/**
 * The web dashboard (docs/dashboard.md) at /app: one page whose modules show each view. The page
 * answers every view's address (/app, /app/media, /app/media/{id}, ...), so a reload or a shared
 * address opens that view; its files are under /app/assets/ and the libraries under /app/vendor/.
 * No authentication here: the page holds no data, it calls the API with the credential the user
 * gives it.
 */

/** How deep a view's address goes below /app (the router has no wildcard; /app/a/b/c is enough for every view). */
const VIEW_PATTERNS = ['/app', '/app/:view', '/app/:view/:item', '/app/:view/:item/:detail'];

export interface DashboardRouteOptions {
  publicUrl: string;
  cdnUrl: string | null;
}

interface Dashboard {
  index: StaticAsset;
  assets: Map<string, StaticAsset>;
  vendor: Map<string, StaticAsset>;
  securityHeaders: Record<string, string>;
}

async function buildDashboard(options: DashboardRouteOptions): Promise<Dashboard> {
  const { assets, vendor, imports, pageTemplate } = await loadDashboardAssets();
  const sources = new Map([...assets].filter(([name]) => name.endsWith('.js')).map(([name, asset]) => [name, asset.plain.toString('utf8')]));
  const modules = {
    // What main.js imports statically; the team screens load when first opened.
    assets: staticImportClosure(sources, 'main.js'),
    // tus-js-client is loaded only when a large file is uploaded.
    vendor: Object.values(imports).filter((url) => !url.endsWith('tus.min.js')),
  };
  const page = dashboardPage(pageTemplate, imports, modules);
  const securityHeaders = dashboardHeaders({
    importMapHash: page.importMapHash,
    fileOrigins: [options.publicUrl, ...(options.cdnUrl ? [options.cdnUrl] : [])],
  });
  return { index: await staticAsset('text/html; charset=utf-8', page.html), assets, vendor, securityHeaders };
}

/** Built on the first request: compressing costs about a second of CPU that a service nobody browses need not pay. */
export function dashboardRoutes(options: DashboardRouteOptions): Route[] {
  let dashboard: Promise<Dashboard> | null = null;
  const built = (): Promise<Dashboard> => {
    if (!dashboard) {
      dashboard = buildDashboard(options);
      dashboard.catch(() => (dashboard = null));
    }
    return dashboard;
  };
  const route = publicRouteBuilder();
  const answer = async (request: HttpRequest, pick: (dashboard: Dashboard) => StaticAsset): Promise<HttpResult> => {
    const current = await built();
    return send(request, pick(current), current.securityHeaders);
  };
  return [
    ...VIEW_PATTERNS.map((pattern) => route('GET', pattern, ({ request }) => answer(request, ({ index }) => index))),
    route('GET', '/app/assets/:asset', ({ request, param }) => answer(request, ({ assets }) => lookUp(assets, param('asset')))),
    route('GET', `${VENDOR_BASE}:asset`, ({ request, param }) => answer(request, ({ vendor }) => lookUp(vendor, param('asset')))),
  ];
}

function lookUp(files: Map<string, StaticAsset>, name: string): StaticAsset {
  const asset = files.get(name);
  if (!asset) throw notFound('file', name);
  return asset;
}

/**
 * Every file is revalidated (`no-cache`) against its ETag: the addresses carry no version, and a
 * 304 costs one small round trip. The answer is brotli or gzip as the client accepts.
 */
function send(request: HttpRequest, asset: StaticAsset, securityHeaders: Record<string, string>): HttpResult {
  const encoding = chooseEncoding(asset, request.headers['accept-encoding']);
  const etag = etagOf(asset, encoding);
  const headers: Record<string, string> = {
    ...securityHeaders,
    'Content-Type': asset.contentType,
    'Cache-Control': 'no-cache',
    ETag: etag,
    Vary: 'Accept-Encoding',
    ...(encoding !== 'identity' && { 'Content-Encoding': encoding }),
  };
  if (matches(request.headers['if-none-match'], etag)) return { status: 304, headers };
  const body = encodedBody(asset, encoding);
  return { status: 200, headers, stream: { body: Readable.from([body]), length: body.length } };
}

function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch.trim() === '*' || ifNoneMatch.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === etag);
}
