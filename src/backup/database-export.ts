import { open, rename, rm } from 'node:fs/promises';
import { once } from 'node:events';
import { createGzip } from 'node:zlib';
import pg from 'pg';
import { appliedMigrations, listSequences, listTables, quoted } from './database-schema.ts';
import { DUMP_FORMAT, DUMP_FORMAT_VERSION, LineDigest, type DumpHeader, type SequenceValue } from './dump-format.ts';

/** Rows fetched from the cursor at a time. */
const FETCH_ROWS = 1000;

export interface ExportSummary {
  file: string;
  migrations: number;
  tables: number;
  rows: number;
}

/**
 * Writes the database `client` sees to `file` (dump-format.ts). The caller has opened a transaction
 * `isolation level repeatable read, read only` on `client` and not yet queried in it: every table is
 * then read from the one snapshot its first statement takes, whatever the running service writes
 * meanwhile. The file appears under its name only once complete (written beside it, then renamed).
 */
export async function writeDump(client: pg.ClientBase, file: string): Promise<ExportSummary> {
  const partial = `${file}.partial`;
  // Opened before anything is read, so a path that cannot be written fails at once.
  const out = (await open(partial, 'w')).createWriteStream();
  const gzip = createGzip();
  const piped = new Promise<void>((resolve, reject) => {
    out.once('finish', resolve);
    out.once('error', reject);
    gzip.once('error', reject);
  });
  piped.catch(() => undefined); // awaited below; a failure meanwhile must not go unhandled
  gzip.pipe(out);
  const digest = new LineDigest();
  const write = async (line: string, hashed = true): Promise<void> => {
    if (hashed) digest.add(line);
    if (!gzip.write(`${line}\n`)) await once(gzip, 'drain');
  };
  try {
    const migrations = await appliedMigrations(client); // the first statement: it takes the snapshot
    const server = (await client.query<{ version: string }>('show server_version')).rows[0]!.version;
    const header: DumpHeader = { format: DUMP_FORMAT, formatVersion: DUMP_FORMAT_VERSION, createdAt: new Date().toISOString(), migrations, server };
    await write(JSON.stringify(header));
    const tables = await listTables(client);
    let rows = 0;
    for (const table of tables) {
      const columnList = table.columns.map(quoted).join(', ');
      const count = Number((await client.query<{ n: string }>(`select count(*) as n from ${quoted(table.name)}`)).rows[0]!.n);
      await write(JSON.stringify({ table: table.name, columns: table.columns, rows: count }));
      await client.query(`declare dump_rows no scroll cursor for select row_to_json(r)::text as j from (select ${columnList} from ${quoted(table.name)}) r`);
      let written = 0;
      for (;;) {
        const batch = await client.query<{ j: string }>(`fetch forward ${FETCH_ROWS} from dump_rows`);
        for (const row of batch.rows) await write(row.j);
        written += batch.rows.length;
        if (batch.rows.length < FETCH_ROWS) break;
      }
      await client.query('close dump_rows');
      if (written !== count) throw new Error(`table ${table.name}: counted ${count} rows but read ${written} (not one snapshot?)`);
      rows += written;
    }
    const sequences: SequenceValue[] = [];
    for (const name of await listSequences(client)) {
      const value = (await client.query<{ last_value: string; is_called: boolean }>(`select last_value::text, is_called from ${quoted(name)}`)).rows[0]!;
      sequences.push({ name, lastValue: value.last_value, isCalled: value.is_called });
    }
    await write(JSON.stringify({ sequences }));
    await write(JSON.stringify({ end: true, tables: tables.length, rows, sha256: digest.hex() }), false);
    gzip.end();
    await piped;
    await rename(partial, file);
    return { file, migrations: migrations.length, tables: tables.length, rows };
  } catch (error) {
    gzip.destroy();
    out.destroy();
    await rm(partial, { force: true });
    throw error;
  }
}

/** Opens the one-snapshot transaction writeDump() needs on `client`. */
export async function beginSnapshot(client: pg.ClientBase): Promise<void> {
  await client.query('begin isolation level repeatable read, read only');
}

/** `db export FILE`: the database at `databaseUrl`, from one snapshot, to `file`. */
export async function exportDatabase(databaseUrl: string, file: string): Promise<ExportSummary> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await beginSnapshot(client);
    const summary = await writeDump(client, file);
    await client.query('commit');
    return summary;
  } finally {
    await client.end();
  }
}
