import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { JobRunner } from '../../jobs/job-runner.ts';
import { JOBS } from '../../jobs/jobs.ts';
import type { MediaEditService } from '../media/media-edit.service.ts';

/**
 * Spec 2.2 folder rules, enforced hourly on the files directly in each folder
 * (never on files in its subfolders):
 * - `retentionDays`: files created more than N days before the run are deleted;
 * - `maxFiles`: only the newest N files, by (created_at desc, id desc), are kept.
 *
 * Once per hour across instances (JOBS.folderRuleSweep in src/jobs/jobs.ts):
 * only the instance that claims the hour sweeps; every other one answers
 * `ran: false`. A claimed hour is not retried, even if its run failed: the
 * next hour catches up.
 *
 * The work is batched SQL: folders with rules are read in pages, candidate ids
 * are selected BATCH_SIZE at a time through the (team_id, folder_id,
 * created_at desc, id desc) index, and every batch is deleted through
 * MediaEditService.deleteMany, exactly as DELETE /delete/{id} (rows, counted
 * storage, objects after commit, CDN purge). Between batches the event loop is
 * free. Each folder rule that deleted files logs one line
 * `{ teamId, folderId, rule, deleted }` ("folder rule sweep deleted files").
 */

const JOB = JOBS.folderRuleSweep;
export const BATCH_SIZE = 500;

export type FolderRule = 'retentionDays' | 'maxFiles';

export interface SweepResult {
  /** False when another run holds the lock or the hour was already claimed. */
  ran: boolean;
  deleted: number;
}

export interface FolderRuleSweeperOptions {
  orm: MikroORM;
  edits: Pick<MediaEditService, 'deleteMany'>;
  logger: Pick<Logger, 'info' | 'error'>;
  batchSize?: number;
}

interface RunToken {
  aborted: boolean;
}

interface FolderRow {
  id: string;
  team_id: string;
  retention_days: number | null;
  max_files: number | null;
}

export class FolderRuleSweeper {
  private readonly orm: MikroORM;
  private readonly edits: Pick<MediaEditService, 'deleteMany'>;
  private readonly logger: Pick<Logger, 'info' | 'error'>;
  private readonly batchSize: number;
  private readonly runner: JobRunner<number>;
  /** Runs in progress; stop() aborts them after their current batch. */
  private readonly runs = new Set<RunToken>();

  constructor(options: FolderRuleSweeperOptions) {
    this.orm = options.orm;
    this.edits = options.edits;
    this.logger = options.logger;
    this.batchSize = options.batchSize ?? BATCH_SIZE;
    this.runner = new JobRunner(JOB, {
      orm: this.orm,
      work: (now, slot) => this.sweepAndLog(now, slot!),
      onError: (error) => this.logger.error({ err: error, job: JOB.name }, 'folder rule sweep failed'),
    });
  }

  /** Fires a little after every interval boundary (the hour), with a small random jitter; never keeps the process alive. */
  start(intervalMs?: number): void {
    this.runner.start(intervalMs);
  }

  /**
   * Stops the timer; runs in progress stop after their current batch, and the
   * timer's run is awaited. runOnce() still works when called directly.
   */
  async stop(): Promise<void> {
    const stopped = this.runner.stop();
    for (const run of this.runs) run.aborted = true;
    await stopped;
  }

  /** One run for the hour of `now`, if this instance wins it. */
  async runOnce(now = new Date()): Promise<SweepResult> {
    const run = await this.runner.runOnce(now);
    return run.ran ? { ran: true, deleted: run.result } : { ran: false, deleted: 0 };
  }

  private async sweepAndLog(now: Date, slot: Date): Promise<number> {
    const token: RunToken = { aborted: false };
    this.runs.add(token);
    const deleted = await this.sweep(now, token).finally(() => this.runs.delete(token));
    this.logger.info({ job: JOB.name, slot, deleted }, 'folder rule sweep finished');
    return deleted;
  }

  private async sweep(now: Date, token: RunToken): Promise<number> {
    let deleted = 0;
    let after: string | null = null;
    for (;;) {
      const folders: FolderRow[] = await this.orm.em.fork().execute<FolderRow[]>(
        `select id, team_id, retention_days, max_files from media_folder
          where (retention_days is not null or max_files is not null) ${after === null ? '' : 'and id > ?'}
          order by id limit ?`,
        after === null ? [this.batchSize] : [after, this.batchSize],
      );
      for (const folder of folders) {
        if (token.aborted) return deleted;
        if (folder.retention_days !== null) deleted += await this.enforce(folder, 'retentionDays', now, folder.retention_days, token);
        if (folder.max_files !== null) deleted += await this.enforce(folder, 'maxFiles', now, folder.max_files, token);
      }
      if (folders.length < this.batchSize) return deleted;
      after = folders.at(-1)!.id;
    }
  }

  /** Deletes the folder's files that break one rule, a batch at a time; answers how many were deleted. */
  private async enforce(folder: FolderRow, rule: FolderRule, now: Date, limit: number, token: RunToken): Promise<number> {
    const { id: folderId, team_id: teamId } = folder;
    let deleted = 0;
    while (!token.aborted) {
      const candidates =
        rule === 'retentionDays'
          ? await this.orm.em.fork().execute<{ id: string }[]>(
              `select id from media_file
                where team_id = ? and folder_id = ? and created_at < ?::timestamptz - ?::int * interval '1 day'
                order by created_at, id limit ?`,
              [teamId, folderId, now, limit, this.batchSize],
            )
          : await this.orm.em.fork().execute<{ id: string }[]>(
              `select id from media_file
                where team_id = ? and folder_id = ?
                order by created_at desc, id desc offset ? limit ?`,
              [teamId, folderId, limit, this.batchSize],
            );
      if (candidates.length === 0) break;
      const removed = await this.edits.deleteMany(
        teamId,
        candidates.map((row) => row.id),
      );
      deleted += removed.length;
      // Nothing deleted (all gone meanwhile): the next select sees the change; stop rather than spin.
      if (removed.length === 0 || candidates.length < this.batchSize) break;
    }
    if (deleted > 0) this.logger.info({ teamId, folderId, rule, deleted }, 'folder rule sweep deleted files');
    return deleted;
  }
}
