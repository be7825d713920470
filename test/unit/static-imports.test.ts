import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { staticImportClosure, staticImportsOf } from '../../src/http/dashboard/static-imports.ts';

// The dashboard's first load preloads what main.js reaches through static imports; the team
// screens, imported dynamically, load when first opened.

t.test('static imports are found; dynamic ones are not', async (t) => {
  const source = `import { a } from './a.js';\nimport './styles.js';\nexport { b } from './b.js';\nimport { h } from 'preact';\nconst lazy = () => import('./lazy.js');\n`;
  t.same(staticImportsOf(source), ['a.js', 'styles.js', 'b.js']);
});

t.test('the closure follows imports transitively, once each, and refuses a missing module', async (t) => {
  const sources = new Map([['main.js', `import './a.js';`], ['a.js', `import './b.js';\nimport './main.js';`], ['b.js', `const c = () => import('./c.js');`], ['c.js', '']]);
  t.same(staticImportClosure(sources, 'main.js'), ['main.js', 'a.js', 'b.js']);
  t.throws(() => staticImportClosure(new Map([['main.js', `import './gone.js';`]]), 'main.js'), /gone\.js is imported but does not exist/);
});

t.test('the real dashboard: the media views are in the first load, the team screens are not', async (t) => {
  const directory = fileURLToPath(new URL('../../web/dashboard/', import.meta.url));
  const sources = new Map(readdirSync(directory).filter((name) => name.endsWith('.js')).map((name) => [name, readFileSync(`${directory}${name}`, 'utf8')]));
  const firstLoad = staticImportClosure(sources, 'main.js');
  for (const name of ['app.js', 'shell.js', 'media-view.js', 'upload-view.js', 'usage-view.js', 'sign-in-view.js']) t.ok(firstLoad.includes(name), name);
  for (const name of ['members-view.js', 'invites-view.js', 'api-keys-view.js', 'automations-view.js', 'upload-urls-view.js', 'team-log-view.js']) t.notOk(firstLoad.includes(name), `${name} loads when opened`);
});
