import type pg from 'pg';

/**
 * Gives a pooled connection back to the pool when its server connection ends while it is checked
 * out, so that a database restart cannot leak pool slots.
 *
 * Why: Kysely (under MikroORM) releases a transaction's connection only after its COMMIT or
 * ROLLBACK succeeded (kysely-org/kysely#1990). When the database restarts under an open
 * transaction both fail on the dead connection, and the client stays checked out forever: every
 * transaction in flight during a restart took one slot of the pool for good (measured: pool size 3,
 * three transactions cut by a restart, then every query waited forever), and pool.end() at
 * shutdown never returned.
 *
 * How: on each checkout the client's release() is made idempotent, and an 'end' of the connection
 * before release releases it with the error, which makes pg-pool discard it and free its slot. A
 * holder that still has it gets "not queryable" errors at once and its own release() is a no-op.
 */
export function guardPool(pool: pg.Pool): void {
  const connect = pool.connect.bind(pool) as () => Promise<pg.PoolClient>;
  const guarded = async (): Promise<pg.PoolClient> => {
    const client = await connect();
    const release = client.release;
    let released = false;
    const onEnd = () => releaseOnce(new Error('The database connection ended while it was checked out'));
    const releaseOnce = (error?: Error | boolean) => {
      if (released) return;
      released = true;
      client.removeListener('end', onEnd);
      release.call(client, error);
    };
    client.release = releaseOnce;
    client.once('end', onEnd);
    return client;
  };
  // Kysely's PostgresDriver calls connect() without a callback; the callback form is kept for anyone else.
  pool.connect = ((callback?: (error: Error | undefined, client?: pg.PoolClient, done?: (release?: Error | boolean) => void) => void) => {
    if (!callback) return guarded();
    guarded().then(
      (client) => callback(undefined, client, client.release),
      (error: Error) => callback(error),
    );
    return undefined;
  }) as typeof pool.connect;
}
