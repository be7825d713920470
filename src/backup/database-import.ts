import pg from 'pg';
import { initOrm, migrate } from '../db/orm.ts';
import { isKnownPrefix, knownMigrations, unknownMigrations } from '../db/schema-version.ts';
import { entities } from '../domain/entities.ts';
import { badRequest, conflict } from '../errors/errors.ts';
import { appliedMigrations, listSequences, listTables, quoted, type TableInfo } from './database-schema.ts';
import { CorruptDumpError, readDump, verifyDump, type DumpHeader, type SequenceValue } from './dump-format.ts';

/** Rows sent to PostgreSQL per insert statement. */
const INSERT_ROWS = 500;
/** The lock migrate() takes (src/db/orm.ts): no service start migrates the database while the rows load. */
const MIGRATION_LOCK = 727001;

export interface ImportSummary {
  file: string;
  /** The schema version of the file: its last migration. */
  fileVersion: string;
  tables: number;
  rows: number;
  /** Migrations run after the load, to bring the file's schema up to this version. */
  migratedAfterLoad: string[];
}

/**
 * The refusals that come before anything is written: a damaged file, a file of a newer schema than
 * this version knows, a target that is not empty. Answers the file's header.
 */
export async function checkImport(file: string, client: pg.ClientBase): Promise<DumpHeader> {
  let header: DumpHeader;
  try {
    header = await verifyDump(file);
  } catch (error) {
    if (error instanceof CorruptDumpError) throw badRequest(`Cannot import ${file}: ${error.message}`, file);
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw badRequest(`Cannot import ${file}: no such file`, file);
    throw error;
  }
  checkFileSchema(header.migrations, file);
  await checkEmptyTarget(client, header.migrations);
  return header;
}

/** The file's schema must be one this version has (a start of its migration list). */
export function checkFileSchema(migrations: string[], what: string): void {
  const unknown = unknownMigrations(migrations);
  if (unknown.length > 0) {
    throw conflict(
      `${what} was made by a newer version of the service: its schema has ${unknown.length} migration${unknown.length === 1 ? '' : 's'} ` +
        `this version does not know (${unknown.join(', ')}). Import it with that version or a later one.`,
      unknown[0],
    );
  }
  if (migrations.length === 0 || !isKnownPrefix(migrations)) {
    throw badRequest(`${what} lists migrations that are not this version's history (${migrations.join(', ') || 'none'}); it cannot be loaded`, what);
  }
}

/**
 * An empty target: no table holds a row, and any migrations applied to it are a start of the file's
 * (a database that an earlier import migrated before failing counts as empty). Anything else is refused:
 * loading would mix two databases, and replacing one is a decision for its operator, not a flag.
 */
async function checkEmptyTarget(client: pg.ClientBase, fileMigrations: string[]): Promise<void> {
  const applied = await appliedMigrations(client);
  const database = (await client.query<{ name: string }>('select current_database() as name')).rows[0]!.name;
  const refuse = (why: string) =>
    conflict(`The target database "${database}" is not empty (${why}): import only into an empty database (create one, or drop and recreate this one)`, database);
  if (applied.length > fileMigrations.length || !applied.every((name, index) => fileMigrations[index] === name)) {
    throw refuse(`it has ${applied.length} migrations applied, not a start of the file's ${fileMigrations.length}`);
  }
  for (const table of await listTables(client)) {
    const found = await client.query(`select 1 from ${quoted(table.name)} limit 1`);
    if (found.rowCount! > 0) throw refuse(`table ${table.name} has rows`);
  }
}

/**
 * `db import FILE` into the database at `databaseUrl`: checks (checkImport), migrates the empty target to
 * the file's schema, loads every table in one transaction (foreign keys checked once all rows are in,
 * sequences set to the file's values), then runs this version's remaining migrations.
 */
export async function importDatabase(databaseUrl: string, file: string): Promise<ImportSummary> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const header = await checkImport(file, client);
    const fileVersion = header.migrations.at(-1)!;
    const orm = await initOrm({ databaseUrl, poolSize: 2, entities });
    try {
      await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK]);
      let loaded: { tables: number; rows: number };
      try {
        await orm.migrator.up({ to: fileVersion });
        loaded = await loadRows(client, file);
      } finally {
        await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK]);
      }
      const pending = knownMigrations.slice(header.migrations.length);
      await migrate(orm);
      return { file, fileVersion, ...loaded, migratedAfterLoad: [...pending] };
    } finally {
      await orm.close();
    }
  } finally {
    await client.end();
  }
}

interface ForeignKey { table: string; name: string; definition: string }

async function loadRows(client: pg.ClientBase, file: string): Promise<{ tables: number; rows: number }> {
  await client.query('begin');
  try {
    const tables = new Map((await listTables(client)).map((table) => [table.name, table]));
    // The user triggers (tag counts, NOTIFYs) would count or announce the rows again: the file holds their results already.
    for (const name of tables.keys()) await client.query(`alter table ${quoted(name)} disable trigger user`);
    // Foreign keys are checked once every row is in, not row by row in an order the file need not follow (a folder's parent).
    const foreignKeys = (await client.query<ForeignKey>(
      `select conrelid::regclass::text as table, conname as name, pg_get_constraintdef(oid) as definition
         from pg_constraint where contype = 'f' and connamespace = current_schema()::regnamespace order by conrelid, conname`,
    )).rows;
    for (const key of foreignKeys) await client.query(`alter table ${key.table} drop constraint ${quoted(key.name)}`);
    // Rows a migration may have written into the empty tables: the file holds the source's.
    if (tables.size > 0) await client.query(`truncate ${[...tables.keys()].map(quoted).join(', ')}`);

    let current: TableInfo | null = null;
    let batch: string[] = [];
    const seen = new Set<string>();
    let rows = 0;
    let sequences: SequenceValue[] = [];
    const flush = async () => {
      if (!current || batch.length === 0) return;
      const columns = current.columns.map(quoted).join(', ');
      await client.query(
        `insert into ${quoted(current.name)} (${columns}) overriding system value
         select ${columns} from json_populate_recordset(null::${quoted(current.name)}, $1::json)`,
        [`[${batch.join(',')}]`],
      );
      rows += batch.length;
      batch = [];
    };
    for await (const item of readDump(file)) {
      if (item.kind === 'table') {
        await flush();
        current = tables.get(item.table.table) ?? null;
        if (!current || !sameColumns(current.columns, item.table.columns)) {
          throw badRequest(`Cannot import ${file}: its table ${item.table.table} does not match this schema version's (the file is not this service's)`, file);
        }
        seen.add(current.name);
      } else if (item.kind === 'row') {
        batch.push(item.json);
        if (batch.length >= INSERT_ROWS) await flush();
      } else if (item.kind === 'sequences') {
        await flush();
        sequences = item.sequences;
      }
    }
    await flush();
    const missing = [...tables.keys()].filter((name) => !seen.has(name));
    if (missing.length > 0) throw badRequest(`Cannot import ${file}: it has no rows section for ${missing.join(', ')}`, file);
    const known = new Set(await listSequences(client));
    for (const sequence of sequences) {
      if (!known.has(sequence.name)) continue; // a sequence this version no longer has
      await client.query('select setval($1::regclass, $2::bigint, $3)', [quoted(sequence.name), sequence.lastValue, sequence.isCalled]);
    }
    // Adding them back checks every row: a file whose rows do not hold together fails here, and nothing stays.
    for (const key of foreignKeys) await client.query(`alter table ${key.table} add constraint ${quoted(key.name)} ${key.definition}`);
    for (const name of tables.keys()) await client.query(`alter table ${quoted(name)} enable trigger user`);
    await client.query('commit');
    return { tables: tables.size, rows };
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    const code = (error as { code?: string }).code;
    // A row naming one that is not there, a key twice, a value of the wrong type: the file's rows, not the database, are wrong.
    if (code === '23503' || code === '23505' || code?.startsWith('22')) {
      throw badRequest(`Cannot import ${file}: its rows do not load (${(error as Error).message}); nothing was loaded`, file);
    }
    throw error;
  }
}

function sameColumns(ours: string[], theirs: unknown[]): boolean {
  return ours.length === theirs.length && [...ours].sort().join('\0') === [...theirs].map(String).sort().join('\0');
}
