import type { MikroORM } from '@mikro-orm/postgresql';
import type { UploadMaker } from '../../auth/upload-maker.ts';

/** The upload options a tus upload was created with (validated), as its commit needs them. */
export interface TusUploadOptions {
  fileName: string;
  declaredType: string | null;
  folderPath: string[] | null;
  folderId: string | null;
  tags: string[];
  public: boolean | null;
  /** Strip the image's metadata before the commit; null or absent (uploads created before the option): the team's setting decides. */
  stripMetadata?: boolean | null;
}

export interface TusUploadRow {
  id: string;
  teamId: string;
  keyId: string | null;
  /** The key or session that created the upload: its PATCHes are refused once that maker could no longer upload. */
  maker: UploadMaker;
  storageKey: string;
  length: number;
  offset: number;
  /** Upload-Metadata exactly as the client sent it (HEAD answers it back). */
  metadata: string;
  options: TusUploadOptions;
  /** The first bytes of the file, kept until MAX_SNIFF_BYTES (or the whole file) arrived and were sniffed. */
  head: Buffer;
  sniffedType: string | null;
  /** Set once the head was sniffed (sniffedType may still be null: an unknown type). */
  sniffed: boolean;
  multipartId: string | null;
  partCount: number;
  tailBytes: number;
  completedAt: Date | null;
  expiresAt: Date;
}

export interface TusProgressUpdate {
  offset: number;
  multipartId: string | null;
  partCount: number;
  tailBytes: number;
  head: Buffer;
  sniffed: boolean;
  sniffedType: string | null;
  expiresAt: Date;
}

interface RawRow {
  id: string;
  team_id: string;
  key_id: string | null;
  key_prefix: string | null;
  session_id: string | null;
  user_id: string | null;
  storage_key: string;
  length: string | number;
  offset: string | number;
  metadata: string;
  options: TusUploadOptions | string;
  head: Buffer | null;
  sniffed: boolean;
  sniffed_type: string | null;
  multipart_id: string | null;
  part_count: number;
  tail_bytes: string | number;
  completed_at: Date | string | null;
  expires_at: Date | string;
}

const COLUMNS = `id, team_id, key_id, key_prefix, session_id, user_id, storage_key, length, "offset", metadata, options, head, sniffed, sniffed_type, multipart_id,
  part_count, tail_bytes, completed_at, expires_at`;

function toRow(raw: RawRow): TusUploadRow {
  return {
    id: raw.id,
    teamId: raw.team_id,
    keyId: raw.key_id,
    maker: { keyId: raw.key_id, keyPrefix: raw.key_prefix, sessionId: raw.session_id, userId: raw.user_id },
    storageKey: raw.storage_key,
    length: Number(raw.length),
    offset: Number(raw.offset),
    metadata: raw.metadata,
    options: typeof raw.options === 'string' ? (JSON.parse(raw.options) as TusUploadOptions) : raw.options,
    head: raw.head ?? Buffer.alloc(0),
    sniffed: raw.sniffed,
    sniffedType: raw.sniffed_type,
    multipartId: raw.multipart_id,
    partCount: Number(raw.part_count),
    tailBytes: Number(raw.tail_bytes),
    completedAt: raw.completed_at === null ? null : new Date(raw.completed_at),
    expiresAt: new Date(raw.expires_at),
  };
}

/**
 * The `tus_upload` table: an upload's progress and its PATCH lease. Every change that belongs to
 * a PATCH is conditional on the caller's lease token, so an instance that lost its lease (it
 * stalled past `locked_until` and another took over) can no longer record anything.
 */
export class TusUploadRepository {
  private readonly orm: MikroORM;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  private execute<T>(sql: string, params: unknown[]): Promise<T[]> {
    return this.orm.em.getConnection().execute<T[]>(sql, params as never[]);
  }

  async insert(row: Omit<TusUploadRow, 'offset' | 'head' | 'sniffed' | 'sniffedType' | 'partCount' | 'tailBytes' | 'completedAt'>): Promise<void> {
    await this.execute(
      `insert into tus_upload (id, team_id, key_id, key_prefix, session_id, user_id, storage_key, length, metadata, options, multipart_id, expires_at)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?)`,
      [row.id, row.teamId, row.keyId, row.maker.keyPrefix, row.maker.sessionId, row.maker.userId, row.storageKey, row.length, row.metadata, JSON.stringify(row.options), row.multipartId, row.expiresAt],
    );
  }

  async find(teamId: string, id: string): Promise<TusUploadRow | null> {
    const rows = await this.execute<RawRow>(`select ${COLUMNS} from tus_upload where id = ? and team_id = ?`, [id, teamId]);
    return rows[0] ? toRow(rows[0]) : null;
  }

  /** Takes the upload's PATCH lease for `leaseMs` unless another holder's lease is still running; null when it is (or there is no such upload). */
  async claim(teamId: string, id: string, token: string, leaseMs: number): Promise<TusUploadRow | null> {
    const rows = await this.execute<RawRow>(
      `update tus_upload set lock_token = ?, locked_until = now() + ? * interval '1 millisecond'
        where id = ? and team_id = ? and (locked_until is null or locked_until < now())
        returning ${COLUMNS}`,
      [token, leaseMs, id, teamId],
    );
    return rows[0] ? toRow(rows[0]) : null;
  }

  /** Extends a held lease; false when it was lost. */
  async extend(id: string, token: string, leaseMs: number): Promise<boolean> {
    const rows = await this.execute(
      `update tus_upload set locked_until = now() + ? * interval '1 millisecond' where id = ? and lock_token = ? returning id`,
      [leaseMs, id, token],
    );
    return rows.length === 1;
  }

  /** Records durable progress under a held lease; false when the lease was lost. */
  async recordProgress(id: string, token: string, update: TusProgressUpdate): Promise<boolean> {
    const rows = await this.execute(
      `update tus_upload set "offset" = ?, multipart_id = ?, part_count = ?, tail_bytes = ?, head = decode(?, 'hex'), sniffed = ?, sniffed_type = ?,
              expires_at = ?, updated_at = now()
        where id = ? and lock_token = ? returning id`,
      [update.offset, update.multipartId, update.partCount, update.tailBytes, update.head.toString('hex'), update.sniffed, update.sniffedType, update.expiresAt, id, token],
    );
    return rows.length === 1;
  }

  async release(id: string, token: string): Promise<void> {
    await this.execute(`update tus_upload set lock_token = null, locked_until = null where id = ? and lock_token = ?`, [id, token]);
  }

  /** The upload became a media file: its row stays (HEAD answers Media-Id) until it expires. */
  async markCompleted(id: string, expiresAt: Date): Promise<void> {
    await this.execute(
      `update tus_upload set completed_at = now(), expires_at = ?, lock_token = null, locked_until = null, updated_at = now() where id = ?`,
      [expiresAt, id],
    );
  }

  /** Deletes the row (termination, refusal); answers it when it existed. */
  async remove(id: string): Promise<TusUploadRow | null> {
    const rows = await this.execute<RawRow>(`delete from tus_upload where id = ? returning ${COLUMNS}`, [id]);
    return rows[0] ? toRow(rows[0]) : null;
  }

  /**
   * Deletes the rows expired at `now` whose lease is not held (a PATCH in progress keeps its
   * upload), in one statement, so concurrent sweeps of several instances each get distinct rows.
   */
  async removeExpired(now: Date): Promise<TusUploadRow[]> {
    const rows = await this.execute<RawRow>(
      `delete from tus_upload where expires_at < ? and (locked_until is null or locked_until < ?) returning ${COLUMNS}`,
      [now, now],
    );
    return rows.map(toRow);
  }

  /** Whether the upload's media file was committed (the id is shared). */
  async mediaExists(id: string): Promise<boolean> {
    return (await this.execute('select 1 from media_file where id = ?', [id])).length === 1;
  }

  /** Storage keys of every unfinished upload (the crash sweeper must not abort their multipart uploads). */
  async unfinishedKeys(): Promise<string[]> {
    const rows = await this.execute<{ storage_key: string }>('select storage_key from tus_upload where completed_at is null', []);
    return rows.map((row) => row.storage_key);
  }
}
