import { globSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { SQL_OWNERS, serverPassNames } from '../server-pass.ts';

const repo = fileURLToPath(new URL('../..', import.meta.url));
/** A statement written by hand: an `execute`/`query` call, a knex raw, or a query builder. */
const OWN_SQL = /\.execute(<[^>]*>)?\(|\.query\(|\.raw\(|createQueryBuilder|\bqb\(/;

t.test('every module that writes SQL of its own has a file in the server pass that runs it', async (t) => {
  const modules = globSync('src/**/*.ts', { cwd: repo })
    .filter((file) => !file.includes(`${path.sep}migrations${path.sep}`))
    .filter((file) => OWN_SQL.test(readFileSync(path.join(repo, file), 'utf8')))
    .map((file) => path.basename(file));
  t.ok(modules.length > 20, 'the pattern finds the modules');
  for (const module of modules) t.ok(SQL_OWNERS[module], `${module} is in SQL_OWNERS (test/server-pass.ts)`);
  for (const module of Object.keys(SQL_OWNERS)) t.ok(modules.includes(module), `SQL_OWNERS' ${module} is a module with SQL of its own`);
});

t.test('every file named in the server pass exists', async (t) => {
  for (const name of serverPassNames()) {
    t.ok(globSync(`test/integration/${name}.test.ts`, { cwd: repo }).length === 1, `test/integration/${name}.test.ts`);
  }
});
