import { globSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

// The house rules of docs/design.md ("The map of the house"), read from the code's own imports.
const repo = fileURLToPath(new URL('../..', import.meta.url));
const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^'"]*?\bfrom\s+'(\.[^']+)'|\bimport\(\s*'(\.[^']+)'\s*\)/g;

/** Every project file under src/ with the project files it imports (type-only imports included). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of globSync('src/**/*.ts', { cwd: repo }).map((name) => name.split(path.sep).join('/'))) {
    const source = readFileSync(path.join(repo, file), 'utf8');
    const targets = [...source.matchAll(IMPORT)].map((match) => path.posix.normalize(path.posix.join(path.posix.dirname(file), match[1] ?? match[2]!)));
    graph.set(file, targets);
  }
  return graph;
}

const graph = importGraph();
const layerOf = (file: string): string => file === 'src/app.ts' || file === 'src/main.ts' ? file : file.split('/').slice(0, 2).join('/');

/** Layer → the layers it must never import. */
const FORBIDDEN: Record<string, string[]> = {
  'src/domain': ['src/http', 'src/uploads', 'src/composition', 'src/app.ts', 'src/automation-delivery', 'src/cli', 'src/start'],
  'src/db': ['src/domain', 'src/http', 'src/uploads', 'src/composition', 'src/app.ts'],
  'src/storage': ['src/domain', 'src/uploads', 'src/http', 'src/composition', 'src/app.ts'],
  'src/uploads': ['src/http', 'src/composition', 'src/app.ts'],
  'src/http': ['src/composition', 'src/app.ts'],
  'src/jobs': ['src/http', 'src/uploads', 'src/composition', 'src/app.ts'],
  'src/config': ['src/domain', 'src/http', 'src/uploads', 'src/composition', 'src/app.ts'],
  'src/errors': ['src/domain', 'src/http', 'src/uploads', 'src/composition', 'src/app.ts', 'src/config'],
};

t.test('imports point one way: no layer imports a layer above it', async (t) => {
  for (const [file, targets] of graph) {
    const forbidden = FORBIDDEN[layerOf(file)] ?? [];
    for (const target of targets) {
      const layer = layerOf(target);
      if (forbidden.includes(layer)) t.fail(`${file} imports ${target} (${layerOf(file)} must not import ${layer})`);
    }
  }
  t.pass('checked');
});

t.test('only the process entry points import src/app.ts', async (t) => {
  const importers = [...graph].filter(([, targets]) => targets.includes('src/app.ts')).map(([file]) => file).sort();
  t.same(importers, ['src/start/service.ts'].filter((file) => graph.has(file)).sort());
});

t.test('no import circles between files', async (t) => {
  const state = new Map<string, 'visiting' | 'done'>();
  const circles: string[] = [];
  const visit = (file: string, trail: string[]): void => {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'visiting') {
      circles.push([...trail.slice(trail.indexOf(file)), file].join(' -> '));
      return;
    }
    state.set(file, 'visiting');
    for (const target of graph.get(file) ?? []) if (graph.has(target)) visit(target, [...trail, file]);
    state.set(file, 'done');
  };
  for (const file of graph.keys()) visit(file, []);
  t.same(circles, [], 'no file reaches itself through its imports');
});
