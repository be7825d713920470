import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { ObjectStore } from '../storage/object-store.ts';
import type { ReservationOwner } from '../domain/usage/reservation-owner.ts';
import type { IdempotencyKeys } from '../domain/idempotency/idempotency-keys.ts';
import { JobRunner } from './job-runner.ts';
import { JOBS } from './jobs.ts';

/**
 * Crash safety (issue 6.2): what an instance killed mid-upload (SIGKILL, OOM,
 * power loss) leaves behind is removed by the next sweep of any instance:
 *
 * 1. `upload_reservation` rows not refreshed for `minAgeSeconds` are deleted and
 *    their bytes given back to `team.reserved_storage`, in one statement
 *    (`delete ... returning` feeding the update), so every row is released once
 *    even when several instances sweep at the same moment.
 * 2. In-progress writes of the store older than `minAgeSeconds` (fs temp files
 *    by mtime, S3 multipart uploads of the service's key prefix by initiation
 *    date) are aborted, except those whose key still has a fresh reservation
 *    (a live upload on some instance) or is being written by this instance.
 *    Aborting is idempotent in both drivers.
 *
 * Live uploads refresh their reservation's `updated_at` every
 * RESERVATION_REFRESH_MS (UploadService), so a reservation older than
 * `minAgeSeconds` (default 600) belongs to an instance that is gone. No lock
 * is needed: every step is idempotent.
 *
 * Before both, a restarted instance releases its own previous incarnations'
 * leftovers at once, whatever their age (issue 17.7): reservations carrying
 * its instance id and another boot id, and the temp files / multipart
 * uploads of their storage keys, and their running Idempotency-Key claims. Its instance id is claimed for the life of
 * the process (InstanceIdentity), so those incarnations are dead. Uploads too
 * small to be reserved (UNRESERVED_BYTES) hold no quota; their temp files are
 * left to the age-based step.
 *
 * Last, Idempotency-Keys past their 24 hours (as of the run's `now`) are
 * deleted, in batches that skip rows another instance is deleting.
 */

const CRASH_SWEEP_JOB = JOBS.crashSweep.name;

const RELEASE_STALE = `
with stale as (delete from upload_reservation where updated_at < ? and not (id::text = any(string_to_array(?, ',')))
                  and not exists (select 1 from tus_upload tu where tu.id = upload_reservation.id) returning team_id, bytes),
     per_team as (select team_id, sum(bytes)::bigint as bytes, count(*)::int as rows from stale group by team_id)
update team t set reserved_storage = t.reserved_storage - per_team.bytes
  from per_team where t.id = per_team.team_id
returning t.id as team_id, per_team.bytes, per_team.rows`;

const RELEASE_PREVIOUS_INCARNATIONS = `
with dead as (delete from upload_reservation where instance_id = ? and boot_id is distinct from ?::uuid returning team_id, bytes, storage_key),
     per_team as (select team_id, sum(bytes)::bigint as bytes, count(*)::int as rows from dead group by team_id),
     released as (update team t set reserved_storage = t.reserved_storage - per_team.bytes from per_team where t.id = per_team.team_id)
select storage_key, team_id, bytes from dead`;

export interface CrashSweepResult {
  /** Stale reservation rows deleted (previous incarnations' included). */
  reservations: number;
  /** Bytes given back to team.reserved_storage. */
  releasedBytes: number;
  /** Temp files / multipart uploads aborted. */
  uploads: number;
  /** Expired resumable (tus) uploads removed. */
  tusExpired: number;
}

export interface CrashSweeperOptions {
  orm: MikroORM;
  store: ObjectStore;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  minAgeSeconds: number;
  /** Uploads running in this instance: their reservations and writes are never swept. */
  liveUploads?: () => Iterable<{ id: string; storageKey: string }>;
  /** This process's identity; its previous incarnations' leftovers are released regardless of age. Null: age only (CLI). */
  owner?: ReservationOwner | null;
  /** Expired keys are deleted, and the running claims of this instance's earlier starts freed. */
  idempotencyKeys?: Pick<IdempotencyKeys, 'sweepExpired' | 'releasePreviousIncarnations'> | null;
  /** Resumable uploads: expired ones are removed by each sweep; unfinished ones are never taken for crashed uploads. */
  tus?: TusSweep | null;
}

/** What the sweeper needs of resumable (tus) uploads (src/uploads/tus/tus-service.ts). */
export interface TusSweep {
  /** Removes uploads expired at `now` (row, reservation, bytes). */
  sweepExpired(now: Date): Promise<{ expired: number; releasedBytes: number }>;
  /** Storage keys of the unfinished uploads: their multipart uploads live across requests. */
  unfinishedKeys(): Promise<string[]>;
}

export class CrashSweeper {
  private readonly orm: MikroORM;
  private readonly store: ObjectStore;
  private readonly logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  private readonly minAgeMs: number;
  private readonly liveUploads: () => Iterable<{ id: string; storageKey: string }>;
  private readonly owner: ReservationOwner | null;
  private readonly idempotencyKeys: CrashSweeperOptions['idempotencyKeys'];
  private readonly tus: TusSweep | null;
  private readonly runner: JobRunner;

  constructor(options: CrashSweeperOptions) {
    this.orm = options.orm;
    this.store = options.store;
    this.logger = options.logger;
    this.minAgeMs = options.minAgeSeconds * 1000;
    this.liveUploads = options.liveUploads ?? (() => []);
    this.owner = options.owner ?? null;
    this.idempotencyKeys = options.idempotencyKeys ?? null;
    this.tus = options.tus ?? null;
    this.runner = new JobRunner(JOBS.crashSweep, {
      work: (now) => this.runOnce(now),
      onError: (error) => this.logger.error({ err: error, job: CRASH_SWEEP_JOB }, 'crash sweep failed'),
    });
  }

  /** Sweeps at once, then every `intervalMs` (JOBS.crashSweep); failures are logged, never thrown. */
  start(intervalMs?: number): void {
    this.runner.start(intervalMs);
  }

  /** Stops the timer and waits for a run in progress. */
  stop(): Promise<void> {
    return this.runner.stop();
  }

  async runOnce(now = new Date()): Promise<CrashSweepResult> {
    const previous = await this.releasePreviousIncarnations();
    const aged = await this.sweepAged(now);
    const tus = this.tus ? await this.tus.sweepExpired(now) : { expired: 0, releasedBytes: 0 };
    const result = {
      reservations: previous.reservations + aged.reservations,
      releasedBytes: previous.releasedBytes + aged.releasedBytes + tus.releasedBytes,
      uploads: previous.uploads + aged.uploads,
      tusExpired: tus.expired,
    };
    if (result.reservations > 0 || result.uploads > 0 || result.tusExpired > 0) this.logger.info({ job: CRASH_SWEEP_JOB, ...result }, 'crash sweep cleaned up');
    await this.sweepIdempotencyKeys(now);
    return result;
  }

  private async sweepIdempotencyKeys(now: Date): Promise<void> {
    if (!this.idempotencyKeys) return;
    const claims = await this.idempotencyKeys.releasePreviousIncarnations();
    const expired = await this.idempotencyKeys.sweepExpired(now);
    if (claims > 0 || expired > 0) {
      this.logger.info({ job: CRASH_SWEEP_JOB, previousClaims: claims, expiredKeys: expired }, 'idempotency keys swept');
    }
  }

  /** Reservations (and their in-progress writes) of this instance's earlier starts: dead, since this process holds the instance id. */
  private async releasePreviousIncarnations(): Promise<CrashSweepResult> {
    if (!this.owner) return { reservations: 0, releasedBytes: 0, uploads: 0, tusExpired: 0 };
    const dead = await this.orm.em
      .fork()
      .execute<{ storage_key: string; team_id: string; bytes: string | number }[]>(RELEASE_PREVIOUS_INCARNATIONS, [this.owner.instanceId, this.owner.bootId]);
    let releasedBytes = 0;
    let uploads = 0;
    for (const row of dead) {
      releasedBytes += Number(row.bytes);
      try {
        uploads += await this.store.abortUploadsOf(row.storage_key);
      } catch (error) {
        // Its bytes are already given back; the write itself is left to the age-based step.
        this.logger.error({ err: error, job: CRASH_SWEEP_JOB, key: row.storage_key }, 'could not abort the upload of a previous incarnation');
      }
    }
    if (dead.length > 0) {
      this.logger.warn(
        { job: CRASH_SWEEP_JOB, instanceId: this.owner.instanceId, reservations: dead.length, bytes: releasedBytes, uploads },
        "released the previous incarnation's upload reservations",
      );
    }
    return { reservations: dead.length, releasedBytes, uploads, tusExpired: 0 };
  }

  private async sweepAged(now: Date): Promise<CrashSweepResult> {
    const cutoff = new Date(now.getTime() - this.minAgeMs);
    const local = [...this.liveUploads()];
    const released = await this.orm.em
      .fork()
      .execute<{ team_id: string; bytes: string | number; rows: number }[]>(RELEASE_STALE, [cutoff, local.map((upload) => upload.id).join(',')]);
    let reservations = 0;
    let releasedBytes = 0;
    for (const row of released) {
      reservations += Number(row.rows);
      releasedBytes += Number(row.bytes);
      this.logger.warn({ job: CRASH_SWEEP_JOB, teamId: row.team_id, reservations: Number(row.rows), bytes: Number(row.bytes) }, 'released stale upload reservations');
    }

    // Keys of live uploads: a fresh reservation (any instance) or a write of this instance.
    const fresh = await this.orm.em.fork().execute<{ storage_key: string }[]>('select storage_key from upload_reservation where updated_at >= ?', [cutoff]);
    const resumable = this.tus ? await this.tus.unfinishedKeys() : [];
    const live = new Set<string>([...fresh.map((row) => row.storage_key), ...local.map((upload) => upload.storageKey), ...resumable]);
    let uploads = 0;
    for (const upload of await this.store.listStaleUploads(cutoff)) {
      if (upload.key !== '' && live.has(upload.key)) continue;
      try {
        await this.store.abortStaleUpload(upload);
        uploads++;
      } catch (error) {
        this.logger.error({ err: error, job: CRASH_SWEEP_JOB, key: upload.key, uploadId: upload.uploadId }, 'could not abort a stale upload');
      }
    }
    return { reservations, releasedBytes, uploads, tusExpired: 0 };
  }
}
