// The `db` place: the bytes of small media files, kept in PostgreSQL (`media_content`,
// Migration20261201020000MediaContent) and written by the batch commit that writes their rows
// (src/uploads/commit/group-commit.ts), never through a writer of this store. This store reads them,
// and removes them once `storage migrate` has copied them elsewhere; a row deleted takes its bytes
// with it. docs/performance.md ("Small files in the database") has the reasons and the numbers.
import { Readable } from 'node:stream';
import type { MikroORM } from '@mikro-orm/postgresql';
import { CompiledQuery } from 'kysely';
import { StorageError, assertValidKey, checkRange } from '../object-store.ts';
import type { ObjectInfo, ObjectStore, ObjectWriter, ReadOptions, StaleUpload } from '../object-store.ts';
import { databaseLocation } from '../storage-location.ts';

const MEDIA_KEY = /^media\/[0-9a-f-]{36}\/([0-9a-f-]{36})$/;

/** The media id a media file's key names (`media/<teamId>/<mediaId>`); null for any other key, which this store never holds. */
export function mediaIdOfKey(key: string): string | null {
  return MEDIA_KEY.exec(key)?.[1] ?? null;
}

function unavailable(operation: string, key: string | null, cause: unknown): StorageError {
  return new StorageError(`Reading from the database failed: ${cause instanceof Error ? cause.message : String(cause)}`, {
    code: 'unavailable', operation, key, cause,
  });
}

export class DatabaseObjectStore implements ObjectStore {
  readonly driver = 'db';
  readonly location = databaseLocation();
  private readonly orm: MikroORM;

  constructor(orm: MikroORM) {
    this.orm = orm;
  }

  private async query<Row>(operation: string, key: string | null, sql: string, parameters: unknown[]): Promise<Row[]> {
    try {
      const { rows } = await this.orm.em.getKysely().executeQuery<Row>(CompiledQuery.raw(sql, parameters));
      return rows;
    } catch (error) {
      throw unavailable(operation, key, error);
    }
  }

  /** A range is cut out by PostgreSQL (substring of the bytea), so only its bytes cross the wire. */
  async read(key: string, options?: ReadOptions): Promise<NodeJS.ReadableStream & AsyncIterable<Buffer>> {
    assertValidKey(key, 'read');
    const { start, end } = checkRange(options, key);
    const mediaId = mediaIdOfKey(key);
    const rows = mediaId === null ? [] : await this.query<{ content: Buffer }>('read', key,
      end === undefined
        ? 'select substring(content from $2::int + 1) as content from media_content where media_id = $1'
        : 'select substring(content from $2::int + 1 for $3::int) as content from media_content where media_id = $1',
      end === undefined ? [mediaId, start] : [mediaId, start, end - start + 1]);
    const row = rows[0];
    if (!row) throw new StorageError(`No such object: ${key}`, { code: 'not-found', operation: 'read', key });
    return Readable.from([row.content], { objectMode: false });
  }

  async stat(key: string): Promise<ObjectInfo | null> {
    assertValidKey(key, 'stat');
    const mediaId = mediaIdOfKey(key);
    if (mediaId === null) return null;
    const [row] = await this.query<{ size: number }>('stat', key, 'select octet_length(content) as size from media_content where media_id = $1', [mediaId]);
    return row ? { size: Number(row.size), etag: null, lastModified: null } : null;
  }

  /** Removes the bytes only: the row stays (it points at the copy `storage migrate` made). */
  async remove(key: string): Promise<void> {
    assertValidKey(key, 'remove');
    const mediaId = mediaIdOfKey(key);
    if (mediaId !== null) await this.query('remove', key, 'delete from media_content where media_id = $1', [mediaId]);
  }

  openWriter(key: string): ObjectWriter {
    throw new StorageError('Files reach the database through the upload commit only', { code: 'failed', operation: 'write', key });
  }

  async checkAccess(): Promise<void> {
    await this.query('check', null, 'select 1 from media_content limit 1', []);
  }

  async listStaleUploads(): Promise<StaleUpload[]> {
    return [];
  }

  async abortStaleUpload(): Promise<void> {}

  async abortUploadsOf(): Promise<number> {
    return 0;
  }

  async close(): Promise<void> {}
}
