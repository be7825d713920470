import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import type { ReservationOwner } from '../domain/usage/reservation-owner.ts';

export class InstanceIdentityError extends Error {
  override name = 'InstanceIdentityError';
}

const ID_FILE = 'instance-id';
const MAX_SLOTS = 64;
const LOCK_SQL = `select pg_try_advisory_lock(hashtextextended('media-instance:' || $1, 0)) as locked`;
const RECLAIM_DELAY_MS = 1000;

export interface ClaimOptions {
  databaseUrl: string;
  dataDir: string;
  /** INSTANCE_ID; null: the id stored in DATA_DIR. */
  configured: string | null;
  logger: Pick<Logger, 'warn' | 'error' | 'info'>;
}

/**
 * Who this process is, for the upload reservations it makes (issue 17.7):
 *
 * - `instanceId` survives restarts: INSTANCE_ID when set, otherwise an id
 *   generated once and stored in DATA_DIR/instance-id.
 * - `bootId` is new on every start, so rows of a previous incarnation of the
 *   same instance can be told from this one's.
 *
 * Two live processes never hold one instanceId: the id is claimed with a
 * PostgreSQL session advisory lock on a connection of its own, held for the
 * life of the process and released by PostgreSQL when the process dies
 * (SIGKILL included). Processes that share a DATA_DIR take the first free
 * slot of the stored id (`<id>`, `<id>.2`, `<id>.3`, ...); a configured
 * INSTANCE_ID that a live process holds stops the start with an error.
 * Whoever claims an id knows its previous holder is dead, so it may release
 * that holder's leftovers at once.
 */
export class InstanceIdentity implements ReservationOwner {
  readonly instanceId: string;
  readonly bootId = randomUUID();
  private readonly options: ClaimOptions;
  private client: pg.Client | null;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | null = null;

  private constructor(instanceId: string, client: pg.Client, options: ClaimOptions) {
    this.instanceId = instanceId;
    this.client = client;
    this.options = options;
    this.watch(client);
  }

  /** Claims this process's identity; throws InstanceIdentityError when a configured INSTANCE_ID is held by a live process. */
  static async claim(options: ClaimOptions): Promise<InstanceIdentity> {
    const candidates = options.configured ? [options.configured] : slots(await storedId(options.dataDir));
    for (const candidate of candidates) {
      const client = await tryLock(options.databaseUrl, candidate);
      if (client) return new InstanceIdentity(candidate, client, options);
    }
    throw new InstanceIdentityError(
      options.configured
        ? `INSTANCE_ID ${options.configured} is in use by a live instance; give every instance its own`
        : `All ${MAX_SLOTS} instance ids of ${join(options.dataDir, ID_FILE)} are in use by live instances`,
    );
  }

  /** Releases the claim (graceful stop); the lock goes with the connection. */
  async release(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  /**
   * A lost connection loses the lock (a database restart): it is taken again as soon as the
   * database answers. Meanwhile nothing else changes; another process claiming the id in that
   * window is a misconfiguration (same INSTANCE_ID) and is logged.
   */
  private watch(client: pg.Client): void {
    const lost = (error: Error | null) => {
      if (this.stopped || this.client !== client) return;
      this.client = null;
      this.options.logger.warn({ err: error, instanceId: this.instanceId }, 'instance id lock connection lost; claiming it again');
      this.scheduleReclaim();
    };
    client.on('error', (error) => lost(error));
    client.on('end', () => lost(null));
  }

  private scheduleReclaim(): void {
    this.retryTimer = setTimeout(() => void this.reclaim(), RECLAIM_DELAY_MS);
    this.retryTimer.unref();
  }

  private async reclaim(): Promise<void> {
    if (this.stopped) return;
    let client: pg.Client | null = null;
    try {
      client = await tryLock(this.options.databaseUrl, this.instanceId);
    } catch {
      // the database is still away
    }
    if (this.stopped) {
      await client?.end().catch(() => undefined);
      return;
    }
    if (client) {
      this.client = client;
      this.watch(client);
      this.options.logger.info({ instanceId: this.instanceId }, 'instance id claimed again');
      return;
    }
    this.scheduleReclaim();
  }
}

/** `id`, `id.2`, ... `id.<MAX_SLOTS>`. */
function slots(id: string): string[] {
  return Array.from({ length: MAX_SLOTS }, (_, index) => (index === 0 ? id : `${id}.${index + 1}`));
}

/** A connection holding the lock of `id`, or null when a live process holds it. */
async function tryLock(databaseUrl: string, id: string): Promise<pg.Client | null> {
  const client = new pg.Client({ connectionString: databaseUrl, application_name: `media-instance ${id}`.slice(0, 63) });
  client.on('error', () => undefined); // until watch() takes over; a failed connect rejects below
  try {
    await client.connect();
    const { rows } = await client.query<{ locked: boolean }>(LOCK_SQL, [id]);
    if (rows[0]?.locked) return client;
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
  await client.end().catch(() => undefined);
  return null;
}

/** The id stored in DATA_DIR, generated on first start. */
async function storedId(dataDir: string): Promise<string> {
  const file = join(dataDir, ID_FILE);
  try {
    const stored = (await readFile(file, 'utf8')).trim();
    // Empty: another process is writing it right now.
    if (stored === '') return await new Promise((resolve) => setTimeout(resolve, 50)).then(() => storedId(dataDir));
    if (INSTANCE_ID_PATTERN.test(stored)) return stored;
    throw new InstanceIdentityError(`${file} must hold an instance id of 1 to 64 characters A-Z a-z 0-9 _ . - (remove it to generate a new one)`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const id = randomBytes(8).toString('hex');
  await mkdir(dataDir, { recursive: true });
  // 'wx' fails if another process created it meanwhile; then that one's id wins.
  try {
    await writeFile(file, `${id}\n`, { flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return storedId(dataDir);
    throw error;
  }
  return id;
}

/** What INSTANCE_ID (and the stored id) may look like. */
export const INSTANCE_ID_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
