/**
 * The second pass of `npm test` runs against TEST_DATABASE_URL, a PostgreSQL server of another
 * major version than the embedded one (18 embedded, 15 on CI's machine). What can differ between
 * the two is the SQL: the migrations (applied to the server once per pass, test/run.ts), the
 * plpgsql functions they create, and the statements the service writes by hand. The SQL that
 * MikroORM generates from the entities is the same plain SQL on every version.
 *
 * So the pass runs, for every module that writes SQL of its own, one file that runs that SQL
 * (SQL_OWNERS: module file name → test file), plus the files below; not the files that sweep every
 * route (tenant-isolation), whose statements MikroORM writes. test/unit/server-pass.test.ts
 * fails when a module with SQL of its own has no entry, so new SQL cannot slip past the server.
 * `TEST_SERVER_PASS=all npm test` runs every file against the server.
 */
export const SQL_OWNERS: Record<string, string> = {
  'api-key-authenticator.ts': 'auth-hardening',
  'auth-changes.ts': 'auth-hardening',
  'session-authenticator.ts': 'sessions',
  'dispatcher.ts': 'automations-delivery',
  'automation-channel.ts': 'automations-delivery',
  'automation.service.ts': 'automations-api',
  'database-health.ts': 'postgres-restart',
  'notification-listener.ts': 'postgres-restart',
  'embedded-postgres.ts': 'postgres-restart',
  'orm.ts': 'admin-routes',
  'seed-plans.ts': 'team-plans',
  'oauth-sign-in.service.ts': 'oauth-discord',
  'api-key-admin.service.ts': 'team-api-keys',
  'folder-resolver.ts': 'folders',
  'folder.service.ts': 'folders',
  'folder-rule-sweep.ts': 'folder-sweep',
  'job-slot.ts': 'team-subscriptions',
  'subscription-job.ts': 'team-subscriptions',
  'idempotency-keys.ts': 'idempotent-uploads',
  'expired-rows-sweep.ts': 'sessions',
  'launcher-code.service.ts': 'launcher-sign-in',
  'media-edit.service.ts': 'media-edit',
  'media.service.ts': 'media-list',
  'library-routes.ts': 'tags-usage',
  'served-traffic.ts': 'served-traffic',
  'notification-preference.service.ts': 'notification-preferences',
  'notification-deliveries.ts': 'notification-deliveries',
  'discord-status.service.ts': 'discord-member-status',
  'discord-member-record.ts': 'discord-member-status',
  'attached-file.service.ts': 'team-files-fs',
  'team-log-list.ts': 'team-logs',
  'team-deletion.ts': 'team-delete-queue',
  'todo.service.ts': 'todos',
  'meeting.service.ts': 'workspace-meetings',
  'upcoming-meetings.ts': 'workspace-meetings',
  'tus-upload.repository.ts': 'tus',
  'upload-url.service.ts': 'upload-urls',
  'crash-sweeper.ts': 'crash-sweeper',
  'storage-reconcile.ts': 'crash-sweeper',
  'running-uploads.ts': 'two-instances',
  'group-commit.ts': 'group-commit',
  'storage-quota.ts': 'upload-fs',
  'credential.service.ts': 'sessions',
  'user-profile.service.ts': 'verification-tokens',
  'verification-actions.ts': 'verification-tokens',
  'verification-queries.ts': 'verification-tokens',
  'verification-tokens.ts': 'verification-tokens',
  'verification.service.ts': 'verification-mail',
  'deletion-link-routes.ts': 'client',
  'mail-outbox.ts': 'mail',
  'database-schema.ts': 'database-export-import',
  'database-export.ts': 'database-export-import',
  'database-import.ts': 'database-export-import',
  'backup.ts': 'backup-restore',
  'restore.ts': 'backup-restore',
  'backup-guard.ts': 'backup-restore',
  'storage-placement.ts': 'storage-migrate-s3-to-fs',
  'copy-ledger.ts': 'storage-migrate-s3-to-fs',
  'forget-missing.ts': 'storage-forget-missing',
  'thumbnail-queue.ts': 'thumbnails',
  'transform-cache.ts': 'image-transforms',
  'penalty-point.service.ts': 'workspace-people',
  'worry-box.service.ts': 'workspace-people',
  'team-tag.service.ts': 'workspace-people',
  'team-access.service.ts': 'workspace-people',
  'access-assignment.service.ts': 'workspace-people',
  'team-limit-lock.ts': 'workspace-news-links',
  'database-object-store.ts': 'small-files',
};

/** Beyond the SQL owners: the files whose subject is what the database does under them. */
const DATABASE_BEHAVIOUR = [
  // A commit that dies between its statements, and the group commit's batches.
  'group-commit-crash',
  // Instances sharing one database: advisory locks, LISTEN/NOTIFY, reservations.
  'team-limits-cache',
  // The commit of every upload route and its quota arithmetic.
  'idempotent-tus',
  'upload-urls-two-instances',
  // Answers, assignments and slugs decided once by the database between instances.
  'workspace-people-two-instances',
];

export function serverPassNames(): string[] {
  return [...new Set([...Object.values(SQL_OWNERS), ...DATABASE_BEHAVIOUR])].sort();
}
