import { EventEmitter } from 'node:events';
import t from 'tap';
import { isDatabaseUnavailable } from '../../src/db/database-errors.ts';
import { guardPool } from '../../src/db/pool-guard.ts';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

t.test('a database that is down or restarting is told apart from a refused query', async (t) => {
  for (const error of [
    withCode('ECONNREFUSED'), withCode('ECONNRESET'), withCode('ETIMEDOUT'), withCode('57P01'), withCode('57P03'), withCode('08006'), withCode('08001'), withCode('53300'),
    new Error('Connection terminated unexpectedly'), new Error('Client has encountered a connection error and is not queryable'),
    new Error('timeout exceeded when trying to connect'),
  ]) {
    t.ok(isDatabaseUnavailable(error), `${(error as { code?: string }).code ?? error.message}: unavailable`);
  }
  for (const error of [
    withCode('08P01', 'invalid message format'), withCode('23505'), withCode('22P02'), withCode('40001'), new Error('boom'),
    Object.assign(new Error('storage'), { cause: withCode('ECONNREFUSED') }), 'ECONNREFUSED', null, undefined,
  ]) {
    t.notOk(isDatabaseUnavailable(error), `${String((error as { code?: string } | null)?.code ?? (error as Error | null)?.message ?? error)}: not unavailable`);
  }
});

/** A stand-in for pg-pool: connect() hands out clients whose release() may be called once. */
function fakePool() {
  const released: unknown[] = [];
  let doubleReleases = 0;
  const pool = {
    async connect() {
      const client = new EventEmitter() as EventEmitter & { release(error?: unknown): void };
      let done = false;
      client.release = (error?: unknown) => {
        if (done) doubleReleases++;
        done = true;
        released.push(error);
      };
      return client;
    },
  };
  return { pool, released, doubleReleases: () => doubleReleases };
}

t.test('guardPool: a client whose connection ends while checked out goes back to the pool, once', async (t) => {
  const fake = fakePool();
  guardPool(fake.pool as never);
  const client = (await fake.pool.connect()) as unknown as EventEmitter & { release(error?: unknown): void };
  client.emit('end');
  t.equal(fake.released.length, 1, 'released when its connection ended');
  t.type(fake.released[0], Error, 'with an error, so the pool discards it');
  client.release();
  t.equal(fake.released.length, 1, 'the holder\'s own release afterwards is a no-op');
  t.equal(fake.doubleReleases(), 0);

  const healthy = (await fake.pool.connect()) as unknown as EventEmitter & { release(error?: unknown): void };
  healthy.release();
  healthy.emit('end');
  t.same(fake.released.slice(1), [undefined], 'a client released normally is not released again when it ends later');
});
