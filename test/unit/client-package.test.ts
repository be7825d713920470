// docs/client.md names every runtime dependency of the client package, at the version it pins.
import { readFileSync } from 'node:fs';
import t from 'tap';

const packageJson = JSON.parse(readFileSync(new URL('../../clients/typescript/package.json', import.meta.url), 'utf8')) as { dependencies: Record<string, string>; engines: { node: string } };
const guide = readFileSync(new URL('../../docs/client.md', import.meta.url), 'utf8');

t.test('docs/client.md lists each runtime dependency with its version', async (t) => {
  const dependencies = Object.entries(packageJson.dependencies);
  t.ok(dependencies.length > 0);
  for (const [name, version] of dependencies) {
    t.match(guide, new RegExp(`\\| \`${name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\` \\| ${version.replace(/\./g, '\\.')} \\|`), `${name} ${version}`);
  }
});

t.test('docs/client.md states the Node.js versions the package declares', async (t) => {
  t.equal(packageJson.engines.node, '>=20');
  t.match(guide, /It runs on Node\.js 20 or later/);
});
