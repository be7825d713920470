import { readdir, readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { staticAsset, type StaticAsset } from './static-asset.ts';

/**
 * The dashboard's files: its own modules and styles (web/dashboard, plain ES modules and CSS, no
 * build step) and the few library files it imports, taken from node_modules as their packages ship
 * them. Everything is read and compressed once, on the first request for the dashboard.
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

export async function loadDashboardAssets(directory = DASHBOARD_DIRECTORY): Promise<DashboardAssets> {
  const own = (await readdir(directory)).sort().filter((name) => CONTENT_TYPES[extname(name)] !== undefined);
  const assets = new Map(await Promise.all(own.map(async (name) =>
    [name, await staticAsset(CONTENT_TYPES[extname(name)]!, await readFile(join(directory, name)))] as const)));
  const vendor = new Map(await Promise.all(VENDOR_FILES.map(async (file) =>
    [file.name, await staticAsset(CONTENT_TYPES['.js']!, await readFile(resolveVendor(file.resolve)))] as const)));
  const imports = Object.fromEntries(VENDOR_FILES.map((file) => [file.specifier, `${VENDOR_BASE}${file.name}`]));
  return { assets, vendor, imports, pageTemplate: await readFile(join(directory, 'index.html'), 'utf8') };
}
