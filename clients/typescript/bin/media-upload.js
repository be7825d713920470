#!/usr/bin/env node
// The TypeScript source where it is present (this repository, a file: dependency; Node >= 22.18 strips
// the types), the compiled dist/ otherwise (a packed package, whose files are only bin/ and dist/).
import { existsSync } from 'node:fs';

const source = new URL('../src/cli.ts', import.meta.url);
await import(existsSync(source) ? source.href : new URL('../dist/cli.js', import.meta.url).href);
