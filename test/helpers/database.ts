import { randomBytes } from 'node:crypto';
import pg from 'pg';

export type PgClient = pg.Client;

/** Connects a `pg` client to `url`; the caller ends it. */
export async function connectPg(url: string): Promise<PgClient> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

/** Creates a fresh database on the server named by TEST_PG_URL, dropped at teardown; returns its URL. */
export async function createTestDatabase(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const serverUrl = process.env.TEST_PG_URL;
  if (!serverUrl) {
    throw new Error('TEST_PG_URL is not set: run the tests through npm test (it starts a PostgreSQL server for them)');
  }
  const name = `t_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = await connectPg(serverUrl);
  try {
    await admin.query(`create database ${pg.escapeIdentifier(name)}`);
  } finally {
    await admin.end();
  }
  t.teardown(async () => {
    const client = await connectPg(serverUrl);
    try {
      await client.query(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`);
    } finally {
      await client.end();
    }
  });
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
