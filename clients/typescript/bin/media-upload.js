#!/usr/bin/env node
// The built CLI when there is one (npm run build; a packed package), the TypeScript source otherwise (Node >= 22.18).
import { existsSync } from 'node:fs';

const built = new URL('../dist/cli.js', import.meta.url);
await import(existsSync(built) ? built.href : new URL('../src/cli.ts', import.meta.url).href);
