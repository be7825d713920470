import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../../logging/logger.ts';

/** Rows that mean nothing once their time is past: expired sessions, sign-in codes, OAuth states, verification tokens. */
const EXPIRING = [
  { table: 'user_session', column: 'expires_at' },
  { table: 'auth_session_code', column: 'expires' },
  { table: 'oauth_state', column: 'expires_at' },
  { table: 'verification_action_token', column: 'expires_at' },
] as const;

const INTERVAL_MS = 10 * 60 * 1000;

/**
 * Deletes expired rows every ten minutes. Nothing reads them (every lookup checks the expiry
 * itself), so the sweep only keeps the tables small; any instance may run it, and two instances
 * running it at once delete nothing twice.
 */
export class ExpiredRowsSweeper {
  private readonly orm: MikroORM;
  private readonly logger: Pick<Logger, 'info' | 'error'>;
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<unknown> | null = null;

  constructor(options: { orm: MikroORM; logger: Pick<Logger, 'info' | 'error'> }) {
    this.orm = options.orm;
    this.logger = options.logger;
  }

  start(): void {
    if (this.timer) return;
    const tick = () => {
      if (this.current) return;
      const run = this.runOnce()
        .catch((error: unknown) => this.logger.error({ err: error }, 'expired rows sweep failed'))
        .finally(() => {
          if (this.current === run) this.current = null;
        });
      this.current = run;
    };
    this.timer = setInterval(tick, INTERVAL_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.current?.catch(() => undefined);
  }

  /** Deletes what expired; answers how many rows per table. */
  async runOnce(): Promise<Record<string, number>> {
    const connection = this.orm.em.getConnection();
    const deleted: Record<string, number> = {};
    for (const { table, column } of EXPIRING) {
      const result = await connection.execute<{ affectedRows: number }>(`delete from "${table}" where "${column}" < now()`, [], 'run');
      deleted[table] = result.affectedRows;
    }
    if (Object.values(deleted).some((n) => n > 0)) this.logger.info({ job: 'expired-rows', ...deleted }, 'expired rows deleted');
    return deleted;
  }
}
