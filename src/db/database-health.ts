import pg from 'pg';
import type { Logger } from 'pino';

/**
 * Whether PostgreSQL can be reached, for /healthz.
 *
 * /healthz reads the last result only, so a load balancer polling it costs no query. The result
 * comes from `select 1` on one dedicated connection (outside the pool: a pool busy with upload
 * commits must not make the database look down), at most one check at a time:
 * - every UP_INTERVAL_MS while the database answers, every DOWN_INTERVAL_MS while it does not, so
 *   that a database that is back is reported within a second or two;
 * - at once when that connection drops (a server that stops ends it), and when a request met a
 *   database-unavailable error (suspect()), at most once per SUSPECT_MIN_GAP_MS.
 */

export interface DatabaseStatus {
  available: boolean;
  /** Why the database is not usable; null while it is. */
  cause: string | null;
}

const UP_INTERVAL_MS = 5_000;
const DOWN_INTERVAL_MS = 1_000;
const SUSPECT_MIN_GAP_MS = 500;
/** A connect or `select 1` that takes longer counts as the database being unreachable. */
const CHECK_TIMEOUT_MS = 3_000;

export interface DatabaseHealthOptions {
  databaseUrl: string;
  logger: Pick<Logger, 'info' | 'error'>;
}

export class DatabaseHealth {
  private readonly databaseUrl: string;
  private readonly logger: Pick<Logger, 'info' | 'error'>;
  private current: DatabaseStatus = { available: false, cause: 'not checked yet' };
  private client: pg.Client | null = null;
  private running: Promise<DatabaseStatus> | null = null;
  private lastCheckEnded = 0;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(options: DatabaseHealthOptions) {
    this.databaseUrl = options.databaseUrl;
    this.logger = options.logger;
  }

  get status(): DatabaseStatus {
    return this.current;
  }

  /** Checks once (a check already running is shared); logs when the state changes. */
  check(): Promise<DatabaseStatus> {
    this.running ??= this.runCheck().finally(() => {
      this.running = null;
      this.lastCheckEnded = Date.now();
    });
    return this.running;
  }

  /** A request could not reach the database: check now, unless a check just ran or is running. */
  suspect(): void {
    if (this.stopped || this.running || Date.now() - this.lastCheckEnded < SUSPECT_MIN_GAP_MS) return;
    void this.check();
  }

  /** Re-checks until stop(): every UP_INTERVAL_MS while available, DOWN_INTERVAL_MS while not. */
  start(): void {
    if (this.timer || this.stopped) return;
    const next = (): void => {
      this.timer = setTimeout(() => void this.check().then(() => !this.stopped && next()), this.current.available ? UP_INTERVAL_MS : DOWN_INTERVAL_MS);
      this.timer.unref();
    };
    next();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
    await this.dropClient();
  }

  private async runCheck(): Promise<DatabaseStatus> {
    let next: DatabaseStatus;
    try {
      const client = this.client ?? (await this.connect());
      await client.query('select 1');
      next = { available: true, cause: null };
    } catch (error) {
      await this.dropClient();
      next = { available: false, cause: describe(error) };
    }
    this.record(next);
    return next;
  }

  private async connect(): Promise<pg.Client> {
    const client = new pg.Client({
      connectionString: this.databaseUrl, connectionTimeoutMillis: CHECK_TIMEOUT_MS, query_timeout: CHECK_TIMEOUT_MS, application_name: 'media-health',
    });
    const lost = (error: Error | null): void => {
      if (this.client !== client) return;
      this.client = null;
      void client.end().catch(() => undefined);
      this.record({ available: false, cause: error ? describe(error) : 'the connection to the database ended' });
      this.suspect();
    };
    client.on('error', (error) => lost(error));
    client.on('end', () => lost(null));
    try {
      await client.connect();
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    this.client = client;
    return client;
  }

  private async dropClient(): Promise<void> {
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private record(next: DatabaseStatus): void {
    const before = this.current;
    if (this.stopped && !next.available) return; // our own stop() ended the connection
    this.current = next;
    if (!next.available && (before.available || before.cause !== next.cause)) {
      this.logger.error({ cause: next.cause }, 'database unavailable');
    } else if (next.available && !before.available) {
      this.logger.info('database available');
    }
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // A refused connection to a name with several addresses is an AggregateError with an empty message.
  const inner = error instanceof AggregateError ? error.errors[0] : undefined;
  return error.message || (inner instanceof Error ? inner.message : '') || String((error as { code?: unknown }).code ?? error.name);
}
