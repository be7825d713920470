import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { CompiledQuery } from 'kysely';
import { isDatabaseUnavailable } from '../../db/database-errors.ts';
import { defaultPlanLimits } from '../../domain/plans/plan-limits.ts';

/** What an upload's commit writes: the media row's columns and the outbox payload. */
export interface UploadCommitRecord {
  mediaId: string;
  teamId: string;
  folderId: string | null;
  fileName: string;
  storageKey: string;
  /** Where the object was written (ObjectStore.location): the row records it. */
  storageLocation: string;
  /** A small file's bytes, inserted into media_content with its row (storageLocation `db`); null: in the object store. */
  content?: Buffer | null;
  size: number;
  contentType: string;
  hash: string | null;
  isPublic: boolean;
  tags: string[];
  uploadedByKeyId: string | null;
  createdAt: Date;
  eventId: string;
  /** The `media.uploaded` event's payload. */
  payload: unknown;
  /** The upload's Idempotency-Key claim: its answer is recorded in the commit's transaction. Null without a key. */
  idempotency?: IdempotentCommit | null;
}

/** What an upload with an Idempotency-Key records when it commits. */
export interface IdempotentCommit {
  key: string;
  claimId: string;
  /** What its body was (uploadFingerprint), compared when the key comes again. */
  fingerprint: string;
  /** The answer's body without usedTeamStorage, as JSON text; the commit appends usedTeamStorage. */
  answer: string;
}

/**
 * How one upload of a batch ended. `committed` carries the team's used storage
 * right after it; nothing was written for the others.
 */
export type CommitOutcome =
  | { outcome: 'committed'; usedStorage: number }
  | { outcome: 'too_large'; maxFileBytes: number }
  | { outcome: 'over_quota' | 'folder_gone' | 'team_gone' | 'claim_lost' };

// media_commit_uploads (Migration20261123040000GroupCommit): one call, so one round trip and one
// transaction for the whole batch. The batch goes in as one JSON array, as a bound parameter:
// MikroORM's em.execute would inline it, escaping the JSON text character by character (~12 µs of
// main thread per upload), so the statement goes through the EntityManager's Kysely instead, which
// also runs it in the EntityManager's transaction when there is one.
const COMMIT_UPLOADS = `
select o_media_id as media_id, o_outcome as outcome, o_used_storage as used_storage, o_max_file as max_file
  from media_commit_uploads($1, $2::jsonb, $3, $4, $5::bytea)`;
// The same, for a batch in which some uploads carry an Idempotency-Key claim (Migration20261124010000IdempotencyKeys):
// an upload whose claim was taken over is not committed (claim_lost), the others record their answer with their commit.
const COMMIT_IDEMPOTENT_UPLOADS = COMMIT_UPLOADS.replace('media_commit_uploads(', 'media_commit_uploads_idempotent(');

/**
 * Commits one team's uploads in one statement: each either fully written
 * (media row, tags, outbox event, usage, counted storage, reservation gone) or
 * not at all, decided in order as if they had come one by one. Works inside a
 * caller's transaction too (a commit that first creates its folder path).
 */
export async function commitUploads(em: EntityManager, teamId: string, records: UploadCommitRecord[]): Promise<CommitOutcome[]> {
  // Small files' bytes go one after the other in one bytea parameter (sent in binary), each entry naming its slice.
  const contents: Buffer[] = [];
  let contentBytes = 0;
  const sliceOf = (content: Buffer) => {
    contents.push(content);
    contentBytes += content.length;
    return { content_at: contentBytes - content.length, content_length: content.length };
  };
  const batch = records.map((record, ord) => ({
    ord,
    media_id: record.mediaId,
    folder_id: record.folderId,
    file_name: record.fileName,
    storage_key: record.storageKey,
    storage_location: record.storageLocation,
    size: record.size,
    content_type: record.contentType,
    hash: record.hash,
    is_public: record.isPublic,
    tags: record.tags,
    key_id: record.uploadedByKeyId,
    created_at: record.createdAt.toISOString(),
    event_id: record.eventId,
    payload: record.payload,
    ...(record.content && sliceOf(record.content)),
    ...(record.idempotency && {
      idem_key: record.idempotency.key,
      idem_claim: record.idempotency.claimId,
      idem_fingerprint: record.idempotency.fingerprint,
      answer: record.idempotency.answer,
    }),
  }));
  // Uploads without a key (the fast path) call the plain function: nothing more is locked or written.
  const sql = records.some((record) => record.idempotency) ? COMMIT_IDEMPOTENT_UPLOADS : COMMIT_UPLOADS;
  const { rows } = await em.getKysely().executeQuery<{ media_id: string; outcome: string; used_storage: string | number | null; max_file: string | number | null }>(
    CompiledQuery.raw(sql, [teamId, JSON.stringify(batch), defaultPlanLimits.maxTeamStorage, defaultPlanLimits.maxMediaFileSize, contents.length > 0 ? Buffer.concat(contents) : null]),
  );
  const byId = new Map(rows.map((row) => [row.media_id, row]));
  return records.map((record) => {
    const row = byId.get(record.mediaId);
    if (!row) throw new Error(`the batch commit returned no outcome for ${record.mediaId}`);
    if (row.outcome === 'committed') return { outcome: 'committed', usedStorage: Number(row.used_storage) };
    if (row.outcome === 'too_large') return { outcome: 'too_large', maxFileBytes: Number(row.max_file) };
    return { outcome: row.outcome as 'over_quota' | 'folder_gone' | 'team_gone' | 'claim_lost' };
  });
}

export interface GroupCommitOptions {
  orm: MikroORM;
  /** Most uploads committed in one statement. */
  maxBatch: number;
}

interface Pending {
  record: UploadCommitRecord;
  resolve(outcome: CommitOutcome): void;
  reject(error: unknown): void;
}

interface TeamQueue {
  waiting: Pending[];
  flushing: boolean;
}

/**
 * Group commit per team. An upload ready to commit goes out at once when no
 * batch of its team is in flight on this instance (a lone upload waits for
 * nothing); otherwise it waits for that batch's round trip and goes out with
 * the others that arrived meanwhile, up to `maxBatch`. So while one batch holds
 * the team row, the next accumulates, and one team's uploads pay one row lock
 * and one WAL flush per batch instead of per upload. Teams never wait on
 * each other.
 *
 * A batch that fails as a whole for another reason than an unreachable
 * database (a row the database refuses) is retried upload by upload, so that
 * only the culprit fails.
 */
export class GroupCommit {
  /**
   * One EntityManager for every batch: a batch only executes one statement (no identity map, no
   * transaction of its own), and forking one per batch cost more than the rest of the batch's JavaScript.
   */
  private readonly em: EntityManager;
  private readonly maxBatch: number;
  private readonly teams = new Map<string, TeamQueue>();

  constructor(options: GroupCommitOptions) {
    this.em = options.orm.em.fork();
    this.maxBatch = Math.max(1, options.maxBatch);
  }

  commit(record: UploadCommitRecord): Promise<CommitOutcome> {
    return new Promise<CommitOutcome>((resolve, reject) => {
      let queue = this.teams.get(record.teamId);
      if (!queue) {
        queue = { waiting: [], flushing: false };
        this.teams.set(record.teamId, queue);
      }
      queue.waiting.push({ record, resolve, reject });
      if (!queue.flushing) void this.flush(record.teamId, queue);
    });
  }

  private async flush(teamId: string, queue: TeamQueue): Promise<void> {
    queue.flushing = true;
    while (queue.waiting.length > 0) {
      const batch = queue.waiting.splice(0, this.maxBatch);
      await this.run(teamId, batch);
    }
    queue.flushing = false;
    this.teams.delete(teamId);
  }

  private async run(teamId: string, batch: Pending[]): Promise<void> {
    try {
      const outcomes = await commitUploads(this.em, teamId, batch.map((pending) => pending.record));
      batch.forEach((pending, index) => pending.resolve(outcomes[index]!));
    } catch (error) {
      if (batch.length === 1 || isDatabaseUnavailable(error)) {
        for (const pending of batch) pending.reject(error);
        return;
      }
      for (const pending of batch) await this.run(teamId, [pending]);
    }
  }
}
