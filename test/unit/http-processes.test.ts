import { availableParallelism, tmpdir } from 'node:os';
import t from 'tap';
import { ConfigError, loadConfig } from '../../src/config/config.ts';
import { processShares } from '../../src/start/supervisor.ts';

const load = (env: Record<string, string>) => loadConfig({ env, cwd: tmpdir() });

t.test('HTTP_PROCESSES: 1 by default, an integer, or auto for the cores', (t) => {
  t.equal(load({}).httpProcesses, 1, 'one process unless asked');
  t.equal(load({ HTTP_PROCESSES: '4' }).httpProcesses, 4);
  t.equal(load({ HTTP_PROCESSES: 'auto' }).httpProcesses, availableParallelism());
  for (const bad of ['0', '-1', '1.5', 'all', 'AUTO', '1025']) {
    t.throws(() => load({ HTTP_PROCESSES: bad }), ConfigError, `${bad} is refused`);
    t.throws(() => load({ HTTP_PROCESSES: bad }), { message: /HTTP_PROCESSES must be an integer from 1 to 1024, or "auto"/ });
  }
  t.end();
});

t.test('DATABASE_POOL_SIZE and WORKER_THREADS are divided among the processes', (t) => {
  t.same(processShares({ httpProcesses: 2, databasePoolSize: 10, workerThreads: 2 }), { databasePoolSize: 5, workerThreads: 1 });
  t.same(processShares({ httpProcesses: 3, databasePoolSize: 10, workerThreads: 8 }), { databasePoolSize: 4, workerThreads: 3 }, 'rounded up');
  t.same(processShares({ httpProcesses: 16, databasePoolSize: 10, workerThreads: 4 }), { databasePoolSize: 2, workerThreads: 1 }, 'never below 2 connections and 1 thread');
  t.end();
});
