import type { MikroORM } from '@mikro-orm/postgresql';

/** One team's counted storage (team.used_storage) against the sum of its files' sizes, of every kind. */
export interface StorageDrift {
  teamId: string;
  counted: number;
  actual: number;
  /** counted - actual; 0 when the counter is right. */
  drift: number;
  /** True when the counter was set to `actual` (never in a dry run). */
  repaired: boolean;
}

/** Every stored file of a team, of every kind that counts against maxTeamStorage. */
const STORED_BYTES = `select (select coalesce(sum(size), 0) from media_file where team_id = ?)
                           + (select coalesce(sum(size), 0) from team_file where team_id = ?)
                           + (select coalesce(sum(size), 0) from todo_file where team_id = ?) as actual`;

export interface ReconcileOptions {
  /** Only this team; all teams when absent. */
  teamId?: string;
  /** Report only, change nothing. */
  dryRun?: boolean;
}

/**
 * `storage reconcile`: recomputes every team's used_storage from its files of
 * every kind (media, team files, to-do files) and repairs drift. A repair runs per team in a transaction that first
 * locks the team row (FOR UPDATE): upload commits and deletes change
 * used_storage in the same transaction as the file rows, so once the lock is
 * held the sum read next (a new snapshot under READ COMMITTED) is exact, and
 * running it on several instances at once is harmless.
 */
export async function reconcileStorage(orm: MikroORM, options: ReconcileOptions = {}): Promise<StorageDrift[]> {
  const teams = await orm.em
    .fork()
    .execute<{ id: string }[]>(options.teamId === undefined ? 'select id from team order by id' : 'select id from team where id::text = ?', options.teamId === undefined ? [] : [options.teamId]);
  const report: StorageDrift[] = [];
  for (const { id } of teams) {
    report.push(
      await orm.em.fork().transactional(async (em) => {
        const [team] = await em.execute<{ used_storage: string | number }[]>(
          `select used_storage from team where id = ? ${options.dryRun ? '' : 'for update'}`,
          [id],
        );
        const [sum] = await em.execute<{ actual: string | number }[]>(STORED_BYTES, [id, id, id]);
        const counted = Number(team?.used_storage ?? 0);
        const actual = Number(sum?.actual ?? 0);
        const drift = counted - actual;
        const repair = drift !== 0 && !options.dryRun;
        if (repair) await em.execute('update team set used_storage = ? where id = ?', [actual, id]);
        return { teamId: id, counted, actual, drift, repaired: repair };
      }),
    );
  }
  return report;
}
