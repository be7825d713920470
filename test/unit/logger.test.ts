import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';

// The service's logger batches its lines: a child process logs with stdout on a file, and reports
// the file's size as it goes (on stderr), so the test sees when each line reached the file.
const moduleUrl = pathToFileURL(join(import.meta.dirname, '../../src/logging/logger.ts')).href;

function run(script: string): { sizes: Record<string, number>; lines: Record<string, unknown>[] } {
  const dir = mkdtempSync(join(tmpdir(), 'logger-'));
  const file = join(dir, 'out.log');
  const fd = openSync(file, 'w');
  try {
    const source = `
      const { createLogger } = await import(${JSON.stringify(moduleUrl)});
      const { statSync } = await import('node:fs');
      const size = () => statSync(${JSON.stringify(file)}).size;
      const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
      const sizes = {};
      const logger = createLogger('info');
      ${script}
      process.stderr.write(JSON.stringify(sizes));
    `;
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', source], { stdio: ['ignore', fd, 'pipe'], encoding: 'utf8', timeout: 20_000 });
    if (result.status !== 0) throw new Error(`child failed (${result.status}): ${result.stderr}`);
    const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
    return { sizes: JSON.parse(result.stderr) as Record<string, number>, lines };
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
}

t.test('a line waits for company, then goes out within about 100 ms', async (t) => {
  const { sizes, lines } = run(`
    logger.info('first');
    await sleep(20);
    sizes.soon = size();
    await sleep(400);
    sizes.later = size();
  `);
  t.equal(sizes.soon, 0, 'not written at once: one short line is kept for the next batch');
  t.ok(sizes.later! > 0, 'written by the periodic flush');
  t.match(lines, [{ msg: 'first', level: 30, service: 'media-upload-service' }]);
});

t.test('a full batch goes out at once, without waiting for the flush', async (t) => {
  const { sizes, lines } = run(`
    for (let i = 0; i < 40; i++) logger.info({ i, padding: 'x'.repeat(100) }, 'line');
    await sleep(50);
    sizes.soon = size();
  `);
  t.ok(sizes.soon! >= 3584, `a full batch is written (${sizes.soon} bytes after 50 ms)`);
  t.equal(lines.length, 40, 'and the rest when the process exits');
  t.same(lines.map((line) => line.i), Array.from({ length: 40 }, (_, i) => i), 'in order');
});

t.test('what is buffered when the process exits is written', async (t) => {
  const { lines } = run(`
    logger.info('before exit');
    process.stderr.write('{}');
    process.exit(0);
  `);
  t.match(lines, [{ msg: 'before exit' }]);
});

t.test('no write is larger than PIPE_BUF, so processes sharing a pipe never interleave within a line', async (t) => {
  const { sizes, lines } = run(`
    const { pino } = await import('pino');
    let largest = 0;
    logger[pino.symbols.streamSym].on('write', (bytes) => { largest = Math.max(largest, bytes); });
    for (let i = 0; i < 400; i++) logger.info({ i, padding: 'x'.repeat(100) }, 'line');
    await sleep(300);
    sizes.largest = largest;
  `);
  t.ok(sizes.largest! > 0 && sizes.largest! <= 4096, `largest write ${sizes.largest} bytes`);
  t.equal(lines.length, 400, 'every line, whole');
});
