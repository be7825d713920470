import { MikroORM, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import type { Logger } from 'pino';
import { migrations } from './migrations/index.ts';
import { guardPool } from './pool-guard.ts';
import { ConfigError } from '../config/config.ts';
import { newerSchemaMessage, unknownMigrations } from './schema-version.ts';

export interface OrmOptions {
  databaseUrl: string;
  poolSize: number;
  logger?: Logger;
  /** The mapped entity classes (the domain's list, src/domain/entities.ts, handed in by the caller). */
  entities: NonNullable<Options['entities']>;
}

export async function initOrm(options: OrmOptions): Promise<MikroORM> {
  return MikroORM.init({
    clientUrl: options.databaseUrl,
    entities: options.entities,
    extensions: [Migrator],
    migrations: { migrationsList: migrations, transactional: true, allOrNothing: true, snapshot: false },
    pool: { min: 0, max: options.poolSize },
    // A connection that dies under an open transaction must not keep its pool slot (see pool-guard.ts).
    driverOptions: { onPoolCreated: guardPool },
    discovery: { checkDuplicateTableNames: true },
    // Without this, a forgotten em.fork() would share one identity map across requests.
    allowGlobalContext: false,
    debug: false,
    logger: (message) => options.logger?.debug({ orm: message }, 'orm'),
  });
}

/**
 * Brings the schema up to date; safe when several instances start at once (migrations take a lock).
 * Refuses (ConfigError, a start-up refusal) a database on which a newer version applied migrations
 * this one does not know: running on it would read and write tables this version does not understand.
 */
export async function migrate(orm: MikroORM): Promise<void> {
  await orm.em.getConnection().execute('select pg_advisory_lock(727001)');
  try {
    const unknown = unknownMigrations((await orm.migrator.getExecuted()).map((row) => row.name));
    if (unknown.length > 0) throw new ConfigError(newerSchemaMessage(unknown, 'The database (DATABASE_URL, or the embedded one in DATA_DIR)'));
    await orm.migrator.up();
  } finally {
    await orm.em.getConnection().execute('select pg_advisory_unlock(727001)');
  }
}
