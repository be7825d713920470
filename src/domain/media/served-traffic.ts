import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../../logging/logger.ts';
import { JobRunner } from '../../jobs/job-runner.ts';
import { JOBS } from '../../jobs/jobs.ts';

export interface ServedTrafficOptions {
  orm: MikroORM;
  /** Milliseconds between flushes (default: JOBS.servedTrafficFlush, 5 s); 0 disables the timer (flush() and stop() still write). */
  flushIntervalMs?: number;
  /** Clock for the UTC day a count falls on; Date.now by default. */
  now?: () => number;
  logger?: Logger;
}

interface DayCount {
  teamId: string;
  day: string;
  requests: number;
  bytes: number;
}

/** A streamed response body whose bytes are counted as the server pulls them. */
export type CountedBody = AsyncIterable<Buffer> & { destroy?(): void };

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Requests and body bytes served by GET/HEAD /media/team/... per team and UTC
 * day, for GET /usage. Counted in memory and written to media_served_daily
 * with one additive upsert per flush (every few seconds, on flush() and on
 * stop()), so serving a file never waits for, nor causes, a database write.
 * Several instances add to the same rows. Counts not yet flushed are lost if
 * the process dies without stop(); a failed flush keeps them for the next.
 */
export class ServedTrafficCounter {
  private readonly orm: MikroORM;
  private readonly now: () => number;
  private readonly logger: Logger | undefined;
  private pending = new Map<string, DayCount>();
  private readonly runner: JobRunner;
  private flushing: Promise<void> = Promise.resolve();

  constructor(options: ServedTrafficOptions) {
    this.orm = options.orm;
    this.now = options.now ?? Date.now;
    this.logger = options.logger;
    this.runner = new JobRunner(JOBS.servedTrafficFlush, {
      work: () => this.flush(),
      onError: (error) => this.logger?.error({ err: error }, 'writing served traffic failed; kept for the next flush'),
    });
    if (options.flushIntervalMs !== 0) this.runner.start(options.flushIntervalMs);
  }

  /** Adds to today's (UTC) counts of a team. */
  record(teamId: string, requests: number, bytes: number): void {
    if (requests === 0 && bytes === 0) return;
    const day = new Date(this.now()).toISOString().slice(0, 10);
    const key = `${teamId} ${day}`;
    const entry = this.pending.get(key);
    if (entry) {
      entry.requests += requests;
      entry.bytes += bytes;
    } else {
      this.pending.set(key, { teamId, day, requests, bytes });
    }
  }

  /** One served response (also HEAD and 304, whose bodies are empty). */
  countRequest(teamId: string): void {
    this.record(teamId, 1, 0);
  }

  /**
   * Wraps a response body so that its bytes are counted for the team. A chunk
   * counts once the server asks for the next one: the server's pump only does
   * so after the connection took the chunk whole, so the last chunk counts
   * before the client can have it all, and the count never waits for the
   * storage stream's own end. When the client leaves (`signal` aborts), the
   * chunk in flight is not counted: an aborted download counts the chunks
   * handed to the connection before it left, at most one chunk less than went
   * out. Bytes are added to the UTC day on which they were sent.
   */
  countBody(teamId: string, body: CountedBody, signal?: AbortSignal): CountedBody {
    const record = (bytes: number) => this.record(teamId, 0, bytes);
    return {
      async *[Symbol.asyncIterator]() {
        for await (const chunk of body) {
          yield chunk;
          if (!signal?.aborted) record(chunk.length);
        }
      },
      destroy() {
        body.destroy?.();
      },
    };
  }

  /** Writes the counts gathered so far in one statement; safe to call concurrently (flushes run one after another). */
  flush(): Promise<void> {
    const run = this.flushing.then(() => this.write());
    this.flushing = run.catch(() => undefined);
    return run;
  }

  /** Stops the timer and writes what is left; a failure is logged, not thrown (called at shutdown). */
  async stop(): Promise<void> {
    await this.runner.stop();
    await this.flush().catch((error: unknown) => this.logger?.error({ err: error }, 'writing served traffic at shutdown failed'));
  }

  private async write(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = [...this.pending.values()].filter((entry) => UUID_PATTERN.test(entry.teamId));
    this.pending = new Map();
    // A fixed order, so that two instances flushing the same rows lock them in the same order.
    batch.sort((a, b) => (a.teamId === b.teamId ? a.day.localeCompare(b.day) : a.teamId.localeCompare(b.teamId)));
    // Arrays as literals: one statement whatever the batch size (ids are uuids, days YYYY-MM-DD, counts integers).
    const literal = (values: (string | number)[]) => `{${values.join(',')}}`;
    try {
      // The join skips teams deleted since their files were served (their rows would break the foreign key).
      await this.orm.em.fork().execute(
        `insert into media_served_daily (team_id, day, requests, bytes)
         select c.team_id, c.day, c.requests, c.bytes
           from unnest(?::uuid[], ?::date[], ?::bigint[], ?::bigint[]) as c(team_id, day, requests, bytes)
           join team t on t.id = c.team_id
          order by c.team_id, c.day
         on conflict (team_id, day) do update
           set requests = media_served_daily.requests + excluded.requests,
               bytes = media_served_daily.bytes + excluded.bytes`,
        [
          literal(batch.map((entry) => entry.teamId)),
          literal(batch.map((entry) => entry.day)),
          literal(batch.map((entry) => entry.requests)),
          literal(batch.map((entry) => entry.bytes)),
        ],
      );
    } catch (error) {
      // Keep the counts: they are added to whatever was counted meanwhile and written by the next flush.
      for (const entry of batch) {
        const key = `${entry.teamId} ${entry.day}`;
        const current = this.pending.get(key);
        if (current) {
          current.requests += entry.requests;
          current.bytes += entry.bytes;
        } else {
          this.pending.set(key, entry);
        }
      }
      throw error;
    }
  }
}
