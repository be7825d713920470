#!/usr/bin/env node
// The compiled CLI (dist/), on every supported Node.js (20 and later). dist/ is built before the package is
// packed (prepack), and in the repository by `npm install` / `npm ci` (the root's prepare script).
import { existsSync } from 'node:fs';

const cli = new URL('../dist/cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('media-upload: the client is not built (no dist/cli.js); run `npm run build` in its folder, or `npm install` in the repository\n');
  process.exit(1);
}
await import(cli.href);
