import { createHash } from 'node:crypto';
import { ASSET_BASE } from './dashboard-assets.ts';

/**
 * The dashboard's one HTML page (every /app route answers it; the page's router shows the view of
 * the address). The import map is the page's only inline element: browsers take no import map from
 * a file, so it goes in the page, and the Content-Security-Policy admits exactly its bytes by their
 * SHA-256. It is JSON, not script: nothing inline can run.
 */
export interface DashboardPage {
  html: string;
  /** `'sha256-…'` of the import map, for script-src. */
  importMapHash: string;
}

const IMPORT_MAP_MARK = '<!-- import map -->';
const PRELOADS_MARK = '<!-- module preloads -->';

/**
 * `modules`: the dashboard's own module files and the library URLs, preloaded so that the browser
 * fetches them side by side instead of discovering them one import at a time.
 */
export function dashboardPage(template: string, imports: Record<string, string>, modules: { assets: string[]; vendor: string[] }): DashboardPage {
  if (!template.includes(IMPORT_MAP_MARK) || !template.includes(PRELOADS_MARK)) {
    throw new Error(`web/dashboard/index.html must hold the marks ${IMPORT_MAP_MARK} and ${PRELOADS_MARK}`);
  }
  const importMap = JSON.stringify({ imports });
  const preloads = [...modules.vendor, ...modules.assets.map((name) => `${ASSET_BASE}${name}`)]
    .map((href) => `<link rel="modulepreload" href="${href}">`)
    .join('\n');
  return {
    html: template.replace(IMPORT_MAP_MARK, `<script type="importmap">${importMap}</script>`).replace(PRELOADS_MARK, preloads),
    importMapHash: `'sha256-${createHash('sha256').update(importMap).digest('base64')}'`,
  };
}
