import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { ObjectStore } from '../../storage/object-store.ts';
import type { ResumableStore } from '../../storage/resumable-store.ts';
import { teamCacheTag } from '../media/cache-tags.ts';
import type { CdnPurger } from '../media/cdn-purge.ts';
import { mediaPath, publicMediaUrl } from '../media/media-links.ts';
import { thumbnailPath } from '../media/thumbnail-links.ts';
import { JobRunner } from '../../jobs/job-runner.ts';
import { JOBS } from '../../jobs/jobs.ts';
import { whileNoBackup } from '../storage-removals/backup-guard.ts';

/**
 * Deleting a team (TEAM_DELETE) in two steps that survive a crash between them:
 *
 * 1. One transaction (the caller's): every storage key the team's rows name is written to
 *    `storage_deletion` (media files with their thumbnails and cached resized images, team files,
 *    to-do files: the object; uploads in progress (reservations): their temp file or multipart
 *    upload and the object; unfinished resumable
 *    uploads: their parts and tail), then the team row is deleted. Every table of the team
 *    references it `on delete cascade` (members, groups, keys, invites, logs, folders, media,
 *    files, to-dos, tus uploads, upload URLs, reservations, automations and their deliveries,
 *    subscriptions, modules, notes, usage counters), so nothing is left that names the team,
 *    and its counters (used and reserved storage) go with its row.
 * 2. After the commit (`afterCommit`), the CDN is told to drop the public links of its media
 *    files (CDN_PURGE_URL; a purge lost to a crash only leaves cached copies until they expire),
 *    and `drain` removes the objects and each queue row once its object is gone.
 *    Removal is idempotent, so a crash (or a storage outage) anywhere leaves rows that the next
 *    drain, at start-up and every few minutes (JOBS.storageDeletionDrain), finishes. No row names an object any more
 *    once step 1 committed, so nothing serves it meanwhile.
 */

/** Queue rows removed per drain run (the rest wait for the next one). */
const DRAIN_BATCH = 500;

interface QueueRow {
  id: string;
  kind: 'object' | 'upload' | 'resumable';
  storage_key: string;
  data: Record<string, unknown> | null;
}

const QUEUE_TEAM_OBJECTS = `
insert into storage_deletion (id, kind, storage_key, data, reason, created_at)
select gen_random_uuid(), kind, storage_key, data, 'TEAM_DELETE', now() from (
  -- not a small file kept in the database: its bytes go with its row
  select 'object' as kind, storage_key, null::jsonb as data from media_file where team_id = ? and storage_location is distinct from 'db'
  -- thumbnailStorageKey (src/domain/media/thumbnail-links.ts); one still being made is removed by its thumbnailer
  union all select 'object', 'thumbnails/' || team_id || '/' || id || '.webp', null from media_file where team_id = ? and thumbnail_status = 'ready'
  -- cached resized images; one recorded from now on waits for the team's lock and then fails (transform-cache.ts)
  union all select 'object', storage_key, null from media_transform where team_id = ?
  union all select 'object', storage_key, null from team_file where team_id = ?
  union all select 'object', storage_key, null from todo_file where team_id = ?
  union all select 'upload', storage_key, null from upload_reservation r where team_id = ?
    and not exists (select 1 from tus_upload tu where tu.id = r.id)
  union all select 'resumable', storage_key,
    jsonb_build_object('id', id, 'offset', "offset", 'multipartId', multipart_id, 'partCount', part_count, 'tailBytes', tail_bytes)
    from tus_upload where team_id = ? and completed_at is null
) keys`;

export class TeamDeletion {
  private readonly orm: MikroORM;
  private readonly store: ObjectStore;
  private readonly resumable: ResumableStore;
  private readonly logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  private readonly purger: CdnPurger | null;
  private readonly linkBaseUrl: string;
  private readonly runner: JobRunner;

  constructor(options: {
    orm: MikroORM; store: ObjectStore; resumable: ResumableStore; logger: Pick<Logger, 'info' | 'warn' | 'error'>;
    purger?: CdnPurger; linkBaseUrl?: string;
  }) {
    this.orm = options.orm;
    this.store = options.store;
    this.resumable = options.resumable;
    this.logger = options.logger;
    this.purger = options.purger ?? null;
    this.linkBaseUrl = options.linkBaseUrl ?? '';
    this.runner = new JobRunner(JOBS.storageDeletionDrain, {
      work: () => this.drain(),
      onError: (error) => this.logger.error({ err: error }, 'storage deletion drain failed'),
    });
  }

  /**
   * Step 1, in the caller's transaction: queues the team's objects and deletes the team with
   * everything it has. Answers how many objects were queued and the public links to purge.
   */
  async deleteRows(em: EntityManager, teamId: string): Promise<{ teamId: string; queued: number; publicLinks: string[] }> {
    // Serialises with uploads committing into the team (they lock the team row to count its storage).
    await em.execute('select id from team where id = ? for update', [teamId]);
    const published = await em.execute<{ id: string; file_name: string; thumbnail_status: string | null }[]>(
      'select id, file_name, thumbnail_status from media_file where team_id = ? and is_public',
      [teamId],
    );
    const queued = await em.execute<{ id: string }[]>(`${QUEUE_TEAM_OBJECTS} returning id`, [teamId, teamId, teamId, teamId, teamId, teamId, teamId]);
    await em.execute('delete from team where id = ?', [teamId]);
    // A thumbnail was served only once ready.
    const publicLinks = published.flatMap((row) => [mediaPath(teamId, row.id, row.file_name), ...(row.thumbnail_status === 'ready' ? [thumbnailPath(teamId, row.id)] : [])])
      .map((path) => publicMediaUrl(this.linkBaseUrl, path));
    return { teamId, queued: queued.length, publicLinks };
  }

  /** Step 2, once step 1 committed: purges the public links, then removes the objects. */
  async afterCommit(deleted: { teamId: string; publicLinks: string[] }): Promise<void> {
    if (this.purger && deleted.publicLinks.length > 0) await this.purger.purge({ urls: deleted.publicLinks, tags: [teamCacheTag(deleted.teamId)] });
    await this.drain();
  }

  /**
   * Step 2: removes queued objects; answers how many were removed. Never throws for one object: it stays
   * queued with its error. While a backup runs it removes nothing (backup-guard.ts): the next run does.
   */
  async drain(): Promise<number> {
    let removed = 0;
    for (;;) {
      let fetched = 0;
      let progressed = 0;
      const ran = await whileNoBackup(this.orm, async (em) => {
        const rows = await em.execute<QueueRow[]>(
          'select id, kind, storage_key, data from storage_deletion where attempts < 100 order by created_at, id limit ?',
          [DRAIN_BATCH],
        );
        fetched = rows.length;
        for (const row of rows) {
          try {
            await this.remove(row);
            await em.execute('delete from storage_deletion where id = ?', [row.id]);
            progressed++;
          } catch (error) {
            this.logger.warn({ err: error, key: row.storage_key, kind: row.kind }, 'could not remove a queued object; it stays queued');
            await em.execute('update storage_deletion set attempts = attempts + 1, last_error = ? where id = ?', [
              String((error as Error).message ?? error).slice(0, 1000), row.id,
            ]);
          }
        }
      });
      removed += progressed;
      if (!ran || fetched < DRAIN_BATCH || progressed === 0) break;
    }
    if (removed > 0) this.logger.info({ removed }, 'removed queued objects (of deleted teams, or deletions deferred by a backup)');
    return removed;
  }

  private async remove(row: QueueRow): Promise<void> {
    if (row.kind === 'resumable') {
      const data = row.data as { id: string; offset: number | string; multipartId: string | null; partCount: number; tailBytes: number | string };
      await this.resumable.discard({
        id: data.id, key: row.storage_key, offset: Number(data.offset), multipartId: data.multipartId, partCount: data.partCount, tailBytes: Number(data.tailBytes),
      });
      await this.store.remove(row.storage_key);
      return;
    }
    // An upload cut short by the deletion: its temp file or multipart upload, and the object should its write have finished.
    if (row.kind === 'upload') await this.store.abortUploadsOf(row.storage_key);
    await this.store.remove(row.storage_key);
  }

  /** Drains at once, then every `intervalMs`; failures are logged. */
  start(intervalMs?: number): void {
    this.runner.start(intervalMs);
  }

  stop(): Promise<void> {
    return this.runner.stop();
  }
}
