import type { MikroORM } from '@mikro-orm/postgresql';
import type { NotificationDeliveries } from '../domain/notifications/notification-deliveries.ts';
import type { Logger } from '../logging/logger.ts';
import { JobRunner } from './job-runner.ts';
import { JOBS } from './jobs.ts';

/** Rows that mean nothing once their time is past: expired sessions, sign-in codes, OAuth states, verification tokens. */
const EXPIRING = [
  { table: 'user_session', column: 'expires_at' },
  { table: 'auth_session_code', column: 'expires' },
  { table: 'oauth_state', column: 'expires_at' },
  { table: 'verification_action_token', column: 'expires_at' },
] as const;

/**
 * Deletes expired rows every ten minutes (JOBS.expiredRows), and the notification deliveries past
 * their retentionUntil (NotificationDeliveries.sweepExpired, in batches). Nothing reads them (every lookup checks the expiry
 * itself), so the sweep only keeps the tables small; any instance may run it, and two instances
 * running it at once delete nothing twice.
 */
export class ExpiredRowsSweeper {
  private readonly orm: MikroORM;
  private readonly notificationDeliveries: NotificationDeliveries;
  private readonly logger: Pick<Logger, 'info' | 'error'>;
  private readonly runner: JobRunner;

  constructor(options: { orm: MikroORM; notificationDeliveries: NotificationDeliveries; logger: Pick<Logger, 'info' | 'error'> }) {
    this.orm = options.orm;
    this.notificationDeliveries = options.notificationDeliveries;
    this.logger = options.logger;
    this.runner = new JobRunner(JOBS.expiredRows, {
      work: () => this.runOnce(),
      onError: (error) => this.logger.error({ err: error }, 'expired rows sweep failed'),
    });
  }

  start(): void {
    this.runner.start();
  }

  stop(): Promise<void> {
    return this.runner.stop();
  }

  /** Deletes what expired; answers how many rows per table. */
  async runOnce(): Promise<Record<string, number>> {
    const connection = this.orm.em.getConnection();
    const deleted: Record<string, number> = {};
    for (const { table, column } of EXPIRING) {
      const result = await connection.execute<{ affectedRows: number }>(`delete from "${table}" where "${column}" < now()`, [], 'run');
      deleted[table] = result.affectedRows;
    }
    deleted['notification_delivery'] = await this.notificationDeliveries.sweepExpired();
    if (Object.values(deleted).some((n) => n > 0)) this.logger.info({ job: JOBS.expiredRows.name, ...deleted }, 'expired rows deleted');
    return deleted;
  }
}
