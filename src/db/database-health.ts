import pg from 'pg';
import type { Logger } from 'pino';
import { DependencyProbe, type DependencyStatus } from '../health/dependency-probe.ts';

/**
 * Whether PostgreSQL can be reached, for /healthz (a DependencyProbe: shared check, status, log on change, re-checks).
 *
 * /healthz reads the last result only, so a load balancer polling it costs no query. The result
 * comes from `select 1` on one dedicated connection (outside the pool: a pool busy with upload
 * commits must not make the database look down), at most one check at a time:
 * - every UP_INTERVAL_MS while the database answers, every DOWN_INTERVAL_MS while it does not, so
 *   that a database that is back is reported within a second or two;
 * - at once when that connection drops (a server that stops ends it), and when a request met a
 *   database-unavailable error (suspect()), at most once per SUSPECT_MIN_GAP_MS.
 */

export type DatabaseStatus = DependencyStatus;

const UP_INTERVAL_MS = 5_000;
const DOWN_INTERVAL_MS = 1_000;
const SUSPECT_MIN_GAP_MS = 500;
/** A connect or `select 1` that takes longer counts as the database being unreachable. */
const CHECK_TIMEOUT_MS = 3_000;

export interface DatabaseHealthOptions {
  databaseUrl: string;
  logger: Pick<Logger, 'info' | 'error'>;
}

export class DatabaseHealth extends DependencyProbe<DatabaseStatus> {
  private readonly databaseUrl: string;
  private client: pg.Client | null = null;

  constructor(options: DatabaseHealthOptions) {
    super({
      name: 'database',
      logger: options.logger,
      initial: { available: false, cause: 'not checked yet' },
      recheckMs: (status) => (status.available ? UP_INTERVAL_MS : DOWN_INTERVAL_MS),
      suspectMinGapMs: SUSPECT_MIN_GAP_MS,
    });
    this.databaseUrl = options.databaseUrl;
  }

  override async stop(): Promise<void> {
    await super.stop();
    await this.dropClient();
  }

  protected async probe(): Promise<DatabaseStatus> {
    try {
      const client = this.client ?? (await this.connect());
      await client.query('select 1');
      return { available: true, cause: null };
    } catch (error) {
      await this.dropClient();
      return { available: false, cause: describe(error) };
    }
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
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // A refused connection to a name with several addresses is an AggregateError with an empty message.
  const inner = error instanceof AggregateError ? error.errors[0] : undefined;
  return error.message || (inner instanceof Error ? inner.message : '') || String((error as { code?: unknown }).code ?? error.name);
}
