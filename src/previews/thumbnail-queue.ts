import type { MikroORM } from '@mikro-orm/postgresql';
import type { StorageLocation } from '../storage/storage-location.ts';

/** How long a claim holds: a thumbnail not finished by then (its instance died) is claimed again. */
const CLAIM_SECONDS = 120;
/** Claims of one image before it is marked failed: a file that kills its instance every time is not retried forever. */
export const MAX_THUMBNAIL_ATTEMPTS = 5;
/** A transient failure (storage away) waits this long times the attempts before its next claim. */
const RETRY_STEP_SECONDS = 30;

/** One claimed thumbnail to make. */
export interface ThumbnailJob {
  mediaId: string;
  teamId: string;
  storageKey: string;
  /** Where the file is (its row's storage_location): the database, or the object store. */
  storageLocation: StorageLocation | null;
  size: number;
  /** The file's sniffed type: an image, or a video (its poster). */
  contentType: string;
  /** This claim's token: the claim is still ours while the row holds it. */
  claim: string;
}

export type CompleteOutcome = 'done' | 'gone' | 'taken';

/** The instance whose claims these are (its id survives restarts, its boot id does not). */
export interface ClaimOwner {
  instanceId: string;
  bootId: string;
}

/**
 * The thumbnail state on media rows (Migration20261128020000Thumbnails) as a job queue shared by
 * every instance: a claim is one `update … for update skip locked`, so two instances never claim
 * the same row, and a claim that expires (its instance died mid-thumbnail) is claimed again.
 */
export class ThumbnailQueue {
  private readonly orm: MikroORM;
  private readonly owner: ClaimOwner | null;

  /** `owner` null (the cli, tests): claims name no instance and only expire. */
  constructor(orm: MikroORM, owner: ClaimOwner | null = null) {
    this.orm = orm;
    this.owner = owner;
  }

  /**
   * Gives back at once the claims this instance held before it restarted (it died mid-thumbnail):
   * they are claimed again now rather than when they expire. Their attempts stay counted, so an
   * image that kills its instance every time is still given up on. Answers how many were given back.
   */
  async releasePreviousIncarnations(): Promise<number> {
    if (!this.owner) return 0;
    const rows = await this.orm.em.fork().execute<{ id: string }[]>(
      `update media_file set thumbnail_claimed_until = null, thumbnail_claimed_by = null, thumbnail_claim_boot = null
        where thumbnail_status = 'pending' and thumbnail_claimed_by = ? and thumbnail_claim_boot is distinct from ?::uuid
          and thumbnail_claimed_until > now()
        returning id`,
      [this.owner.instanceId, this.owner.bootId],
    );
    return rows.length;
  }

  /** Claims up to `limit` pending thumbnails, oldest uploads first; videos only if `videos` (this instance has ffmpeg). */
  async claim(limit: number, videos: boolean): Promise<ThumbnailJob[]> {
    const em = this.orm.em.fork();
    // Attempts used up by claims that expired: its instance died on it that many times.
    await em.execute(
      `update media_file set thumbnail_status = 'failed', thumbnail_claimed_until = null,
              thumbnail_error = left('gave up after ${MAX_THUMBNAIL_ATTEMPTS} attempts' || coalesce(': ' || thumbnail_error, ''), 255)
        where thumbnail_status = 'pending' and thumbnail_attempts >= ${MAX_THUMBNAIL_ATTEMPTS} and thumbnail_claimed_until < now()`,
    );
    const rows = await em.execute<{
      id: string; team_id: string; storage_key: string; storage_location: string | null; size: string | number; content_type: string; thumbnail_claim: string;
    }[]>(
      `update media_file f
          set thumbnail_claimed_until = now() + interval '${CLAIM_SECONDS} seconds', thumbnail_claim = gen_random_uuid(),
              thumbnail_attempts = f.thumbnail_attempts + 1, thumbnail_claimed_by = ?, thumbnail_claim_boot = ?::uuid
        where f.id in (
          select id from media_file
           where thumbnail_status = 'pending' and (thumbnail_claimed_until is null or thumbnail_claimed_until < now())
             and thumbnail_attempts < ${MAX_THUMBNAIL_ATTEMPTS}${videos ? '' : ` and content_type like 'image/%'`}
           order by created_at limit ? for update skip locked)
        returning f.id, f.team_id, f.storage_key, f.storage_location, f.size, f.content_type, f.thumbnail_claim`,
      [this.owner?.instanceId ?? null, this.owner?.bootId ?? null, limit],
    );
    return rows.map((row) => ({
      mediaId: row.id, teamId: row.team_id, storageKey: row.storage_key, storageLocation: row.storage_location, size: Number(row.size), contentType: row.content_type, claim: row.thumbnail_claim,
    }));
  }

  /**
   * The thumbnail is stored: `done`; `gone`: the file was deleted meanwhile (its thumbnail is the
   * caller's to remove); `taken`: the claim expired and another claim holds it now.
   */
  async complete(job: ThumbnailJob, size: number): Promise<CompleteOutcome> {
    const em = this.orm.em.fork();
    const rows = await em.execute<{ id: string }[]>(
      `update media_file set thumbnail_status = 'ready', thumbnail_size = ?, thumbnail_claimed_until = null, thumbnail_error = null
        where id = ? and thumbnail_status = 'pending' and thumbnail_claim = ? returning id`,
      [size, job.mediaId, job.claim],
    );
    if (rows.length > 0) return 'done';
    const exists = await em.execute<{ id: string }[]>('select id from media_file where id = ?', [job.mediaId]);
    return exists.length > 0 ? 'taken' : 'gone';
  }

  /** sharp cannot make it: never claimed again. */
  async fail(job: ThumbnailJob, reason: string): Promise<void> {
    await this.orm.em.fork().execute(
      `update media_file set thumbnail_status = 'failed', thumbnail_claimed_until = null, thumbnail_error = left(?, 255)
        where id = ? and thumbnail_claim = ?`,
      [reason, job.mediaId, job.claim],
    );
  }

  /** A transient failure: claimed again after a wait growing with the attempts. */
  async retryLater(job: ThumbnailJob, reason: string): Promise<void> {
    await this.orm.em.fork().execute(
      `update media_file set thumbnail_claimed_until = now() + thumbnail_attempts * interval '${RETRY_STEP_SECONDS} seconds', thumbnail_error = left(?, 255)
        where id = ? and thumbnail_claim = ?`,
      [reason, job.mediaId, job.claim],
    );
  }
}
