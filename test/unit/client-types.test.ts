// The client's committed types (clients/typescript/src/generated/openapi.ts) must be what
// openapi-typescript makes of the service's current OpenAPI document.
import { readFile } from 'node:fs/promises';
import t from 'tap';
import { generateTypes } from '../../clients/typescript/scripts/types-source.ts';
import { createOpenApiDocument } from '../../src/http/openapi/document.ts';

t.test('the committed client types are up to date with the OpenAPI document', async (t) => {
  const committed = await readFile(new URL('../../clients/typescript/src/generated/openapi.ts', import.meta.url), 'utf8');
  const generated = await generateTypes(createOpenApiDocument());
  t.ok(committed === generated, 'regenerate with `npm run generate -w @media-upload/client` after changing the API (src/http/openapi)');
});

t.test('the generated types name every operation of the document', async (t) => {
  const generated = await generateTypes(createOpenApiDocument());
  const document = createOpenApiDocument();
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item as Record<string, { operationId?: string }>)) {
      if (operation?.operationId) t.match(generated, new RegExp(`\\n    ${operation.operationId}: \\{`), operation.operationId);
    }
  }
});
