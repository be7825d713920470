import type { JobDefinition } from './job-runner.ts';

const SECOND_MS = 1_000;
const MINUTE_MS = 60 * SECOND_MS;
const HOUR_MS = 60 * MINUTE_MS;

/**
 * Every background job of the service: its name, when it runs and whether it runs once across instances. The work lives with
 * its domain (the owner named on each line), which runs it through a JobRunner built from its entry here; BackgroundJobs
 * (./background-jobs.ts) starts and stops the server's jobs together.
 *
 * pg advisory lock keys in use: 727001 migrations (db/orm.ts), 727002 folder rule sweep, 727003 automation fan-out
 * (automation-delivery/dispatcher.ts), 727015 subscription rules, 727034 storage migrate and prune-old
 * (storage-migration/copy-ledger.ts), 727035 backups (domain/storage-removals/backup-guard.ts). A new once-across-instances job
 * takes a key of its own.
 */
export const JOBS = {
  /** Folder rules (spec 2.2), hourly, once across instances: FolderRuleSweeper (domain/folders/folder-rule-sweep.ts). */
  folderRuleSweep: {
    name: 'folder-rule-sweep',
    schedule: { alignedMs: HOUR_MS, delayMs: 5 * SECOND_MS, maxJitterMs: 30 * SECOND_MS },
    once: { lockKey: 727_002, unit: 'hour' },
  },
  /** Subscription ends and trials (spec 2.14), each minute, once across instances: SubscriptionJob (domain/subscriptions/subscription-job.ts). */
  subscriptionRules: {
    name: 'subscription-rules',
    schedule: { alignedMs: MINUTE_MS, delayMs: SECOND_MS },
    once: { lockKey: 727_015, unit: 'minute' },
  },
  /** Leftovers of crashed uploads and expired idempotency keys, on every instance (idempotent): CrashSweeper (./crash-sweeper.ts). */
  crashSweep: { name: 'crash-sweep', schedule: { everyMs: 5 * MINUTE_MS, atStart: true } },
  /** Expired sessions, sign-in codes, OAuth states, verification tokens, notification deliveries past their retention, on every instance: ExpiredRowsSweeper (./expired-rows-sweep.ts). */
  expiredRows: { name: 'expired-rows', schedule: { everyMs: 10 * MINUTE_MS } },
  /** The objects of deleted teams, and of deletions deferred while a backup ran, on every instance: TeamDeletion.drain (domain/teams/team-deletion.ts). */
  storageDeletionDrain: { name: 'storage-deletion-drain', schedule: { everyMs: 5 * MINUTE_MS, atStart: true } },
  /** Unsent mail, on every instance: SmtpMailSender (mail/smtp-mail-sender.ts), started with MAIL_RETRY_INTERVAL_SECONDS (default 300; 0: never). */
  mailRetry: { name: 'mail-retry', schedule: { everyMs: 5 * MINUTE_MS } },
  /** This instance's served-traffic counts to media_served_daily: ServedTrafficCounter (domain/media/served-traffic.ts), started when it is made. */
  servedTrafficFlush: { name: 'served-traffic-flush', schedule: { everyMs: 5 * SECOND_MS } },
} as const satisfies Record<string, JobDefinition>;
