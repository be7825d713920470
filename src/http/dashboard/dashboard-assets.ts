import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { staticAsset, type StaticAsset } from './static-asset.ts';

/**
 * The dashboard's files: its own modules and styles (web/dashboard, plain ES modules and CSS, no
 * build step) and the few library files it imports, taken from node_modules as their packages ship
 * them. Everything is read and compressed once, when the routes are made.
 */

export const DASHBOARD_DIRECTORY = fileURLToPath(new URL('../../../web/dashboard/', import.meta.url));

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/** The libraries, by the name the dashboard serves them under, and the bare specifier its modules import them by. */
const VENDOR_FILES: { name: string; specifier: string; resolve: string }[] = [
  { name: 'preact.mjs', specifier: 'preact', resolve: 'preact' },
  { name: 'preact-hooks.mjs', specifier: 'preact/hooks', resolve: 'preact/hooks' },
  { name: 'htm.mjs', specifier: 'htm', resolve: 'htm' },
  // tus-js-client's browser build is a UMD file; imported as a module it sets window.tus (web/dashboard/tus-upload.js).
  { name: 'tus.min.js', specifier: 'tus-js-client', resolve: 'tus-js-client/dist/tus.min.js' },
];

export const VENDOR_BASE = '/app/vendor/';
export const ASSET_BASE = '/app/assets/';

export interface DashboardAssets {
  /** web/dashboard's files by name (index.html excluded: the page is built from it). */
  assets: Map<string, StaticAsset>;
  vendor: Map<string, StaticAsset>;
  /** The import map's `imports`: bare specifier to URL. */
  imports: Record<string, string>;
  /** index.html as written, before the import map goes in. */
  pageTemplate: string;
}

/** Resolved as Node resolves an `import` (the packages' ES module builds), from this file. */
function resolveVendor(specifier: string): string {
  return fileURLToPath(import.meta.resolve(specifier));
}

export function loadDashboardAssets(directory = DASHBOARD_DIRECTORY): DashboardAssets {
  const assets = new Map<string, StaticAsset>();
  for (const name of readdirSync(directory).sort()) {
    const contentType = CONTENT_TYPES[extname(name)];
    if (contentType) assets.set(name, staticAsset(contentType, readFileSync(join(directory, name))));
  }
  const vendor = new Map<string, StaticAsset>();
  const imports: Record<string, string> = {};
  for (const file of VENDOR_FILES) {
    vendor.set(file.name, staticAsset(CONTENT_TYPES['.js']!, readFileSync(resolveVendor(file.resolve))));
    imports[file.specifier] = `${VENDOR_BASE}${file.name}`;
  }
  return { assets, vendor, imports, pageTemplate: readFileSync(join(directory, 'index.html'), 'utf8') };
}
