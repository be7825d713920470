import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { initOrm, migrate } from '../../src/db/orm.ts';
import { entities } from '../../src/domain/entities.ts';

export type PgClient = pg.Client;

/** Connects a `pg` client to `url`; the caller ends it. */
export async function connectPg(url: string): Promise<PgClient> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

function databaseUrl(serverUrl: string, name: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function dropDatabase(admin: PgClient, name: string): Promise<void> {
  await admin.query(`alter database ${pg.escapeIdentifier(name)} is_template false`).catch(() => undefined);
  await admin.query(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`);
}

/**
 * Makes `name` on the server at `serverUrl` a template holding every migration, so that each test
 * database is a copy of it (test/run.ts, once per pass) instead of running the migrations again:
 * a fresh service start then only checks them. The migrations themselves still run here, once per
 * server, and in the tests that start from an empty database (`createTestDatabase(t, { empty: true })`).
 */
export async function prepareTemplateDatabase(serverUrl: string, name: string): Promise<void> {
  const admin = await connectPg(serverUrl);
  try {
    await dropDatabase(admin, name);
    await admin.query(`create database ${pg.escapeIdentifier(name)}`);
    const orm = await initOrm({ databaseUrl: databaseUrl(serverUrl, name), poolSize: 1, entities });
    try {
      await migrate(orm);
    } finally {
      await orm.close();
    }
    await admin.query(`alter database ${pg.escapeIdentifier(name)} is_template true`);
  } finally {
    await admin.end();
  }
}

/** Drops the template again (test/run.ts, after the pass on a shared server). */
export async function dropTemplateDatabase(serverUrl: string, name: string): Promise<void> {
  const admin = await connectPg(serverUrl);
  try {
    await dropDatabase(admin, name);
  } finally {
    await admin.end();
  }
}

/**
 * Creates a fresh database on the server named by TEST_PG_URL, dropped at teardown; returns its URL.
 * It is a copy of the migrated template (TEST_PG_TEMPLATE, set by test/run.ts) unless `empty` is set
 * or there is no template.
 */
export async function createTestDatabase(t: { teardown(fn: () => unknown): void }, options: { empty?: boolean } = {}): Promise<string> {
  const serverUrl = process.env.TEST_PG_URL;
  if (!serverUrl) {
    throw new Error('TEST_PG_URL is not set: run the tests through npm test (it starts a PostgreSQL server for them)');
  }
  const name = `t_${process.pid}_${randomBytes(4).toString('hex')}`;
  const template = options.empty ? undefined : process.env.TEST_PG_TEMPLATE;
  const admin = await connectPg(serverUrl);
  try {
    await admin.query(`create database ${pg.escapeIdentifier(name)}${template ? ` template ${pg.escapeIdentifier(template)}` : ''}`);
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
  return databaseUrl(serverUrl, name);
}
