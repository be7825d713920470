import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { createGunzip } from 'node:zlib';

/**
 * The database export file (`db export`, and database.jsonl.gz in a backup): gzip'd JSON lines.
 *
 *   {"format":"media-upload-service-db","formatVersion":1,"createdAt":…,"migrations":[…],"server":…}   the header
 *   {"table":"api_key","columns":["id",…],"rows":2}                                                    a table, then its rows:
 *   {"id":"…","created_at":"2026-11-28T00:17:42.123456+00:00",…}                                       one row_to_json() per line
 *   {"sequences":[{"name":"automation_delivery_seq_seq","lastValue":"5","isCalled":true}]}
 *   {"end":true,"tables":37,"rows":1234,"sha256":"…"}                                                 sha256 of every line above it
 *
 * Rows are PostgreSQL's own JSON of the row (row_to_json), loaded back with json_populate_recordset:
 * the values never pass through JavaScript numbers or Dates, so bigints and microseconds survive.
 * `migrations` is the schema version: the names MikroORM's migrator recorded as applied, in order.
 */

export const DUMP_FORMAT = 'media-upload-service-db';
export const DUMP_FORMAT_VERSION = 1;

export interface DumpHeader {
  format: typeof DUMP_FORMAT;
  formatVersion: number;
  createdAt: string;
  migrations: string[];
  server: string;
}

export interface TableHeader {
  table: string;
  columns: string[];
  rows: number;
}

export interface SequenceValue {
  name: string;
  lastValue: string;
  isCalled: boolean;
}

export interface DumpEnd {
  end: true;
  tables: number;
  rows: number;
  sha256: string;
}

/** Thrown for a file that is not a complete, intact export; the cli shows it as a 400. */
export class CorruptDumpError extends Error {
  override name = 'CorruptDumpError';
}

/** Hashes the lines as written, so the reader can tell a truncated or altered file from an intact one. */
export class LineDigest {
  private readonly hash: Hash = createHash('sha256');

  add(line: string): void {
    this.hash.update(line);
    this.hash.update('\n');
  }

  hex(): string {
    return this.hash.digest('hex');
  }
}

function parseLine<T>(line: string, what: string): T {
  try {
    return JSON.parse(line) as T;
  } catch {
    throw new CorruptDumpError(`the export file is damaged: ${what} is not JSON`);
  }
}

export type DumpItem =
  | { kind: 'header'; header: DumpHeader }
  | { kind: 'table'; table: TableHeader }
  /** One row as the file holds it (JSON text, not parsed: it goes back to PostgreSQL as it came). */
  | { kind: 'row'; table: string; json: string }
  | { kind: 'sequences'; sequences: SequenceValue[] }
  | { kind: 'end'; end: DumpEnd };

/**
 * Reads an export file item by item, checking its structure as it goes: the header first, each table's
 * row count, the end line last with the digest of everything before it. Throws CorruptDumpError on the
 * first thing out of place (a gzip error, a truncated file, a changed byte).
 */
export async function* readDump(file: string): AsyncGenerator<DumpItem> {
  const source = createReadStream(file);
  const gunzip = createGunzip();
  const lines = createInterface({ input: source.pipe(gunzip), crlfDelay: Infinity });
  const failures: Error[] = [];
  const fail = (error: Error) => {
    failures.push(error);
    lines.close();
  };
  source.once('error', fail);
  gunzip.once('error', (error) => fail(new CorruptDumpError(`the export file is damaged or not gzip: ${error.message}`)));
  const digest = new LineDigest();
  let header: DumpHeader | null = null;
  let table: TableHeader | null = null;
  let left = 0;
  let tables = 0;
  let rows = 0;
  let ended = false;
  try {
    for await (const line of lines) {
      if (ended) throw new CorruptDumpError('the export file is damaged: lines after its end');
      if (!header) {
        const parsed = parseLine<Partial<DumpHeader>>(line, 'the header');
        if (parsed.format !== DUMP_FORMAT) throw new CorruptDumpError('not an export of this service (no header)');
        if (parsed.formatVersion !== DUMP_FORMAT_VERSION) {
          throw new CorruptDumpError(`the export file's format version ${parsed.formatVersion} is not ${DUMP_FORMAT_VERSION}, the one this version reads`);
        }
        if (!Array.isArray(parsed.migrations) || !parsed.migrations.every((name) => typeof name === 'string')) {
          throw new CorruptDumpError('the export file is damaged: its header lists no migrations');
        }
        header = parsed as DumpHeader;
        digest.add(line);
        yield { kind: 'header', header };
        continue;
      }
      if (table && left > 0) {
        left--;
        rows++;
        digest.add(line);
        yield { kind: 'row', table: table.table, json: line };
        continue;
      }
      const parsed = parseLine<Record<string, unknown>>(line, 'a section line');
      if (typeof parsed.table === 'string' && Array.isArray(parsed.columns) && Number.isSafeInteger(parsed.rows)) {
        table = parsed as unknown as TableHeader;
        left = table.rows;
        tables++;
        digest.add(line);
        yield { kind: 'table', table };
      } else if (Array.isArray(parsed.sequences)) {
        digest.add(line);
        yield { kind: 'sequences', sequences: parsed.sequences as SequenceValue[] };
      } else if (parsed.end === true) {
        const end = parsed as unknown as DumpEnd;
        if (end.sha256 !== digest.hex() || end.tables !== tables || end.rows !== rows) {
          throw new CorruptDumpError('the export file is damaged: its content does not match its checksum');
        }
        ended = true;
        yield { kind: 'end', end };
      } else {
        throw new CorruptDumpError('the export file is damaged: an unknown line');
      }
    }
    if (failures.length > 0) throw failures[0]!;
    if (!header) throw new CorruptDumpError('the export file is empty');
    if (!ended) throw new CorruptDumpError('the export file is incomplete (it ends before its last line): it was cut short');
  } catch (error) {
    // readline passes the gunzip's own error on: a damaged or truncated gzip stream.
    if (String((error as NodeJS.ErrnoException).code ?? '').startsWith('Z_')) {
      throw new CorruptDumpError(`the export file is damaged or not gzip (${(error as Error).message})`);
    }
    throw error;
  } finally {
    lines.close();
    source.destroy();
  }
}

/** Reads the whole file once to check it, answering its header; throws CorruptDumpError when it is not intact. */
export async function verifyDump(file: string): Promise<DumpHeader> {
  let header: DumpHeader | null = null;
  for await (const item of readDump(file)) if (item.kind === 'header') header = item.header;
  return header!;
}
