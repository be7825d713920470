import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { defaultPlanLimits } from '../../domain/plans/plan-limits.ts';
import type { ReservationOwner } from '../../domain/usage/reservation-owner.ts';

// maxTeamStorage in bytes for the team row `tt` joined with its plan `p`; NULL means unlimited.
// The upload commit (media_commit_uploads, Migration20261123040000GroupCommit) computes the same in plpgsql.
// A key present in the overrides wins even when its value is null (unlimited).
export const LIMIT_BYTES = `(case when tt.limit_overrides -> 'maxTeamStorage' is not null
        then (tt.limit_overrides ->> 'maxTeamStorage')::bigint
        else (coalesce(p.limits, '{"maxTeamStorage": ${defaultPlanLimits.maxTeamStorage}}') ->> 'maxTeamStorage')::bigint end) * 1024`;

// Adds to an upload's reservation, choosing the amount under the team row's lock: the first amount
// when the team would still have AHEAD_MARGIN_BYTES free after it, else the second when that fits,
// else nothing. Answers the bytes added.
const RESERVE = `
with choice as (
  select t.id, case
      when ${LIMIT_BYTES} is null or t.used_storage + t.reserved_storage + ? + ? <= ${LIMIT_BYTES} then ?::bigint
      when t.used_storage + t.reserved_storage + ? <= ${LIMIT_BYTES} then ?::bigint
    end as bytes
    from team t join team tt on tt.id = t.id left join plan p on p.id = tt.plan_id
   where t.id = ?
     for update of t),
allowed as (
  update team t set reserved_storage = t.reserved_storage + choice.bytes
    from choice where t.id = choice.id and choice.bytes is not null
  returning t.id, choice.bytes),
recorded as (
  insert into upload_reservation (id, team_id, bytes, storage_key, created_at, updated_at, instance_id, boot_id)
  select ?, id, bytes, ?, now(), now(), ?, ?::uuid from allowed
  on conflict (id) do update set bytes = upload_reservation.bytes + excluded.bytes, updated_at = now())
select bytes from allowed`;

/**
 * Free storage a team must keep past a reservation of an upload's whole expected size. That size is
 * the most its body can carry, a few hundred bytes of framing more than the file: near its limit, the
 * team reserves in steps instead, so that no file that would fit is refused for another's slack.
 */
export const AHEAD_MARGIN_BYTES = 64 * 1024 * 1024;

/** Whether reserve() would grant `ahead` to a team with `freeStorage` bytes free (null: unlimited): RESERVE's first case. */
export function grantsAhead(freeStorage: number | null, ahead: number): boolean {
  return freeStorage === null || freeStorage - ahead >= AHEAD_MARGIN_BYTES;
}

const RELEASE = `
with released as (delete from upload_reservation where id = ? returning team_id, bytes)
update team t set reserved_storage = t.reserved_storage - released.bytes from released where t.id = released.team_id`;

/**
 * The team storage counter, enforced in the database so that concurrent
 * uploads on any number of instances can never together pass maxTeamStorage.
 *
 * An upload reserves bytes as they arrive (reserved_storage, plus a row in
 * upload_reservation for the sweeper); its commit moves its size from
 * reserved to used in the statement that inserts the media row
 * (group-commit.ts), with the team row locked. Each step is one statement, so
 * the check and the change are atomic.
 */
export class StorageQuota {
  private readonly orm: MikroORM;
  private readonly owner: ReservationOwner | null;

  /** `owner` is written on every reservation, so a restart of the same instance can release them at once (CrashSweeper). */
  constructor(options: { orm: MikroORM; owner?: ReservationOwner | null }) {
    this.orm = options.orm;
    this.owner = options.owner ?? null;
  }

  /**
   * Adds `step` bytes to the upload's reservation, or `ahead` bytes (more) when the team keeps
   * AHEAD_MARGIN_BYTES free after them; answers the bytes added (0: not even `step` fits). One statement.
   */
  async reserve(teamId: string, uploadId: string, storageKey: string, step: number, ahead = step): Promise<number> {
    const rows: { bytes: string | number }[] = await this.orm.em.getConnection().execute(RESERVE, [
      ahead, AHEAD_MARGIN_BYTES, ahead, step, step, teamId, uploadId, storageKey, this.owner?.instanceId ?? null, this.owner?.bootId ?? null,
    ]);
    return rows.length === 1 ? Number(rows[0]!.bytes) : 0;
  }

  /** Gives the upload's reserved bytes back (refusal, abort, failure). Idempotent. */
  async release(uploadId: string): Promise<void> {
    await this.orm.em.getConnection().execute(RELEASE, [uploadId]);
  }

  /** Gives back `size` bytes of a deleted file. */
  async free(em: EntityManager, teamId: string, size: number): Promise<void> {
    await em.execute('update team set used_storage = greatest(used_storage - ?, 0) where id = ?', [size, teamId]);
  }
}
