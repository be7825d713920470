import type { Test } from 'tap';
import { connectPg } from './database.ts';
import { RawConnection } from './raw-connection.ts';
import { eventually } from './wait.ts';

export interface CommitHold {
  /** True once an upload commit of the team waits for the held row. */
  waiting(): Promise<boolean>;
  /** Lets the waiting commits go on. */
  release(): Promise<void>;
}

/**
 * Holds a team's row as the upload commit locks it (FOR NO KEY UPDATE), in a transaction of the
 * test's own, so an upload's commit waits after the service decided to commit it: a test can then
 * cut the client's connection, release, and the file lands with its answer lost. Claims of
 * Idempotency-Keys and reservations are not held (they take weaker locks or none on the row).
 */
export async function holdTeamCommits(databaseUrl: string, teamId: string): Promise<CommitHold> {
  const client = await connectPg(databaseUrl);
  // pg_stat_activity is read from another session: inside a transaction it is a snapshot taken once.
  const observer = await connectPg(databaseUrl);
  await client.query('begin');
  await client.query('select 1 from team where id = $1 for no key update', [teamId]);
  return {
    async waiting() {
      const rows = await observer.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock' and query like '%media_commit_uploads%'`,
      );
      return rows.rows[0]!.n > 0;
    },
    async release() {
      await client.query('rollback');
      await client.end();
      await observer.end();
    },
  };
}

/**
 * Sends a whole request (`head` ends with the blank line) on a raw connection, waits until its
 * commit waits on `hold`, drops the connection before any answer, then releases the hold: the
 * upload lands with its answer lost.
 */
export async function sendAndLoseAnswer(t: Test, port: number, head: string, body: Buffer, hold: CommitHold): Promise<void> {
  const connection = await RawConnection.open(port);
  connection.write(head);
  connection.write(body);
  t.ok(await eventually(() => hold.waiting()), 'the whole body arrived and its commit is under way');
  connection.destroy(); // the client is gone before any answer
  await hold.release();
}
