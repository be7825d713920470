import pg from 'pg';
import { MIGRATIONS_TABLE } from '../db/schema-version.ts';

/**
 * What the export and the import read of a database's catalogue: the service's tables in the current
 * schema (the migrator's own table aside: the header carries its content), their columns, sequences.
 */

export interface TableInfo {
  oid: number;
  name: string;
  /** The columns a row is written with, in order; generated columns are left out (PostgreSQL computes them). */
  columns: string[];
}

export async function listTables(client: pg.ClientBase): Promise<TableInfo[]> {
  const tables = await client.query<{ oid: number; name: string }>(
    `select c.oid::int as oid, c.relname as name from pg_class c
      where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p') and not c.relispartition and c.relname <> $1
      order by c.relname`,
    [MIGRATIONS_TABLE],
  );
  const columns = await client.query<{ oid: number; name: string }>(
    `select a.attrelid::int as oid, a.attname as name from pg_attribute a
       join pg_class c on c.oid = a.attrelid
      where c.relnamespace = current_schema()::regnamespace and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
      order by a.attrelid, a.attnum`,
  );
  return tables.rows.map((table) => ({ ...table, columns: columns.rows.filter((column) => column.oid === table.oid).map((column) => column.name) }));
}

export async function listSequences(client: pg.ClientBase): Promise<string[]> {
  const result = await client.query<{ name: string }>(
    `select relname as name from pg_class where relnamespace = current_schema()::regnamespace and relkind = 'S' order by relname`,
  );
  return result.rows.map((row) => row.name);
}

/** The applied migrations in the order they ran; [] when the migrator's table does not exist (an empty database). */
export async function appliedMigrations(client: pg.ClientBase): Promise<string[]> {
  const exists = await client.query(`select to_regclass(quote_ident(current_schema()) || '.' || $1) is not null as found`, [MIGRATIONS_TABLE]);
  if (!exists.rows[0]?.found) return [];
  const result = await client.query<{ name: string }>(`select name from ${pg.escapeIdentifier(MIGRATIONS_TABLE)} order by id`);
  return result.rows.map((row) => row.name);
}

export const quoted = (name: string): string => pg.escapeIdentifier(name);
