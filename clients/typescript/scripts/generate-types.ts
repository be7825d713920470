// Writes src/generated/openapi.ts: the TypeScript types of the service's OpenAPI document, by openapi-typescript.
//   npm run generate                 from the in-repo document builder (src/http/openapi)
//   npm run generate:from-url -- URL from a running service's GET /v1/openapi.json
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { generateTypes } from './types-source.ts';

const target = fileURLToPath(new URL('../src/generated/openapi.ts', import.meta.url));
const urlIndex = process.argv.indexOf('--url');
let document: unknown;
if (urlIndex === -1) {
  const { createOpenApiDocument } = await import('../../../src/http/openapi/document.ts');
  document = createOpenApiDocument();
} else {
  const base = process.argv[urlIndex + 1] ?? process.env.MEDIA_URL ?? 'http://127.0.0.1:3000';
  const url = base.endsWith('.json') ? base : `${base.replace(/\/+$/, '')}/v1/openapi.json`;
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url} answered ${response.status}`);
  document = await response.json();
}
await writeFile(target, await generateTypes(document));
console.log(`wrote ${target}`);
