import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';

// src/start/thread-pool-size.ts must take effect when imported first: libuv sizes its pool on first
// use. A child process imports it, then holds 8 pool threads with opens of FIFOs nobody writes to;
// a stat can only complete if the pool has more than 8 threads.
const moduleUrl = pathToFileURL(join(import.meta.dirname, '../../src/start/thread-pool-size.ts')).href;

function probe(dir: string, env: NodeJS.ProcessEnv): string {
  const script = `
    await import(${JSON.stringify(moduleUrl)});
    const { open, stat } = await import('node:fs/promises');
    const { closeSync, openSync, constants } = await import('node:fs');
    const fifos = Array.from({ length: 8 }, (_, i) => ${JSON.stringify(dir)} + '/f' + i);
    const held = fifos.map((fifo) => open(fifo, 'r'));
    const verdict = await Promise.race([
      stat('/').then(() => 'free'),
      new Promise((resolve) => setTimeout(() => resolve('stuck'), 1000)),
    ]);
    // A writer on every FIFO (O_RDWR never blocks on Linux): the blocked opens complete, and so do
    // those still queued for a thread, whenever they start. A non-blocking O_WRONLY open instead
    // fails with ENXIO on a FIFO whose open has not started yet, and the child then hangs at exit
    // joining pool threads blocked on the rest.
    const writers = fifos.map((fifo) => openSync(fifo, constants.O_RDWR));
    for (const handle of await Promise.all(held)) await handle.close();
    for (const fd of writers) closeSync(fd);
    console.log(verdict, process.env.UV_THREADPOOL_SIZE);
  `;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env, encoding: 'utf8', timeout: 20_000, killSignal: 'SIGKILL' });
  if (result.status !== 0) throw new Error(result.stderr);
  return result.stdout.trim();
}

t.test('the service sizes libuv\'s pool to 16 unless the environment sets it', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'thread-pool-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  for (let i = 0; i < 8; i++) spawnSync('mkfifo', [join(dir, `f${i}`)]);
  const { UV_THREADPOOL_SIZE: _, ...env } = process.env;
  t.equal(probe(dir, env), 'free 16', 'unset: 16 threads, so 8 blocked opens leave room for a stat');
  t.equal(probe(dir, { ...env, UV_THREADPOOL_SIZE: '4' }), 'stuck 4', "the operator's 4 is kept: 8 blocked opens take every thread");
});
