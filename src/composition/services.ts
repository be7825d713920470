import type { MikroORM } from '@mikro-orm/postgresql';
import type { Redis } from 'ioredis';
import { ApiKeyAuthenticator } from '../auth/api-key-authenticator.ts';
import { Authenticator } from '../auth/authenticator.ts';
import { DiscordProvider } from '../auth/oauth/discord-provider.ts';
import { GoogleProvider } from '../auth/oauth/google-provider.ts';
import { PasswordHasher } from '../auth/password-hash.ts';
import { SessionAuthenticator } from '../auth/session-authenticator.ts';
import { makerMayUpload } from '../auth/upload-maker.ts';
import { AutomationDispatcher } from '../automation-delivery/dispatcher.ts';
import type { InstanceIdentity } from '../bootstrap/instance-identity.ts';
import type { Config } from '../config/config.ts';
import { AccountService } from '../domain/accounts/account.service.ts';
import { OAuthSignInService } from '../domain/accounts/oauth-sign-in.service.ts';
import { ApiKeyAdminService } from '../domain/api-keys/api-key-admin.service.ts';
import { ApiKeyService } from '../domain/api-keys/api-key.service.ts';
import { AutomationService } from '../domain/automations/automation.service.ts';
import { FolderRuleSweeper } from '../domain/folders/folder-rule-sweep.ts';
import { FolderService } from '../domain/folders/folder.service.ts';
import { GroupAdminService } from '../domain/groups/group-admin.service.ts';
import { IdempotencyKeys } from '../domain/idempotency/idempotency-keys.ts';
import { InviteService } from '../domain/invites/invite.service.ts';
import { ExpiredRowsSweeper } from '../jobs/expired-rows-sweep.ts';
import { LauncherCodeService } from '../domain/launcher/launcher-code.service.ts';
import { createCdnPurger } from '../domain/media/cdn-purge.ts';
import { DeletionLinks } from '../domain/media/deletion-links.ts';
import { MediaEditService } from '../domain/media/media-edit.service.ts';
import { MediaService } from '../domain/media/media.service.ts';
import { ServedTrafficCounter } from '../domain/media/served-traffic.ts';
import { SignedLinks } from '../domain/media/signed-links.ts';
import { MemberAdminService } from '../domain/members/member-admin.service.ts';
import { MemberNoteService } from '../domain/members/member-note.service.ts';
import { LogoffService } from '../domain/logoffs/logoff.service.ts';
import { MeetingService } from '../domain/meetings/meeting.service.ts';
import { UpcomingMeetings } from '../domain/meetings/upcoming-meetings.ts';
import { MemberService } from '../domain/members/member.service.ts';
import { TeamModuleService } from '../domain/modules/team-module.service.ts';
import { NotificationPreferenceService } from '../domain/notifications/notification-preference.service.ts';
import { NotificationDeliveries } from '../domain/notifications/notification-deliveries.ts';
import { DiscordStatusService } from '../domain/members/discord-status.service.ts';
import { MailDeliveries } from '../mail/mail-deliveries.ts';
import { PlanQueryService } from '../domain/plans/plan-query.service.ts';
import { SessionService } from '../domain/sessions/session.service.ts';
import { SubscriptionJob } from '../domain/subscriptions/subscription-job.ts';
import { SubscriptionService } from '../domain/subscriptions/subscription.service.ts';
import { AttachedFileService } from '../domain/team-files/attached-file.service.ts';
import { TeamLogList } from '../domain/team-logs/team-log-list.ts';
import { TeamDeletion } from '../domain/teams/team-deletion.ts';
import { TeamMeService } from '../domain/teams/team-me.service.ts';
import { TeamSettingsService } from '../domain/teams/team-settings.service.ts';
import { TeamStateCache } from '../domain/teams/team-state-cache.ts';
import { TeamService } from '../domain/teams/team.service.ts';
import { TodoService } from '../domain/todos/todo.service.ts';
import { AccessAssignmentService } from '../domain/accesses/access-assignment.service.ts';
import { TeamAccessService } from '../domain/accesses/team-access.service.ts';
import { PenaltyPointService } from '../domain/penalty-points/penalty-point.service.ts';
import { TeamTagService } from '../domain/team-tags/team-tag.service.ts';
import { WorryBoxAuthorTags } from '../domain/worry-box/worry-box-author.ts';
import { WorryBoxService } from '../domain/worry-box/worry-box.service.ts';
import { UPLOAD_URL_KEY_LABEL, UPLOAD_URL_MAX_SECONDS, UploadUrlService } from '../uploads/upload-urls/upload-url.service.ts';
import { CrashSweeper } from '../jobs/crash-sweeper.ts';
import { BackgroundJobs } from '../jobs/background-jobs.ts';
import { GroupCommit } from '../uploads/commit/group-commit.ts';
import { StorageQuota } from '../uploads/quota/storage-quota.ts';
import { UploadCommitter } from '../uploads/commit/upload-commit.ts';
import { ACCOUNT_EXPORT_KEY_LABEL, ACCOUNT_EXPORT_TTL_SECONDS } from '../domain/users/account-export.ts';
import { CredentialService } from '../domain/users/credential.service.ts';
import { UserProfileService } from '../domain/users/user-profile.service.ts';
import { VerificationService } from '../domain/verification/verification.service.ts';
import { AdmissionGate } from '../uploads/admission/admission-gate.ts';
import { RequestRateLimiter } from '../limits/rate-limiter.ts';
import { connectRedis } from '../limits/redis-connection.ts';
import type { Logger } from '../logging/logger.ts';
import { createMailSender, type ManagedMailSender } from '../mail/create-mail-sender.ts';
import { loadXxhash } from '../uploads/hashing/content-hash.ts';
import { Metrics } from '../observability/metrics.ts';
import { MediaPool } from '../pool/media-pool.ts';
import { createObjectStore, createResumableStore } from '../storage/create-object-store.ts';
import type { ObjectStore } from '../storage/object-store.ts';
import { DatabaseFirstStore } from '../storage/db/database-first-store.ts';
import { DatabaseObjectStore } from '../storage/db/database-object-store.ts';
import { THUMBNAIL_SOURCE_TYPES } from '../domain/media/thumbnail-links.ts';
import { ThumbnailQueue } from '../previews/thumbnail-queue.ts';
import { PreviewProcess } from '../previews/preview-process.ts';
import { Thumbnailer } from '../previews/thumbnailer.ts';
import { ImageTransformer } from '../previews/image-transformer.ts';
import { TransformCache } from '../previews/transform-cache.ts';
import { TusService } from '../uploads/tus/tus-service.ts';
import { MAX_BODY_BYTES, UploadService } from '../uploads/receive/upload-service.ts';
import { MetadataStripper } from '../uploads/metadata/metadata-stripper.ts';
import { UploadUseCase } from '../uploads/upload-use-case.ts';
import type { TxtResolver } from '../domain/portal/txt-resolver.ts';
import { composeNewsLinkPortal, type NewsLinkPortalServices } from './news-link-portal.ts';

/** Most uploads of one team committed in one statement (group commit). */
const GROUP_COMMIT_MAX_BATCH = 64;
/** Cached team limits are dropped on change (TEAM_LIMITS_CHANNEL); this only bounds a missed notification. */
const TEAM_STATE_CACHE_MS = 60_000;

/** The services both the server and the CLI get. */
export interface CoreServices extends NewsLinkPortalServices {
  orm: MikroORM;
  /** Team API keys and session tokens on the team and media routes; session tokens on the user's own routes. */
  authenticator: Authenticator;
  /** Users' signed-in sessions. */
  sessions: SessionService;
  /** Email-and-password sign-up, sign-in and password changes. */
  credentials: CredentialService;
  /** Users' own records; the operator's disable, enable and global permissions. */
  profiles: UserProfileService;
  /** Users' linked accounts (spec 2.6). */
  accounts: AccountService;
  /** Sign-in with Discord and Google (OAUTH_* settings). */
  oauth: OAuthSignInService;
  /** Sign-in codes for launchers. */
  launcherCodes: LauncherCodeService;
  /** A user's notification preferences. */
  notificationPreferences: NotificationPreferenceService;
  /** What became of each notification to a user (spec 2.9); swept past its retention by expiredRows. */
  notificationDeliveries: NotificationDeliveries;
  /** A member's Discord status (spec 2.8), from its linked account and its last Discord sign-in. */
  discordStatuses: DiscordStatusService;
  teams: TeamService;
  /** Team limits and storage counters for uploads; invalidated through TEAM_LIMITS_CHANNEL. */
  teamStates: TeamStateCache;
  /** Members and groups as the operator routes and the CLI make them. */
  members: MemberService;
  apiKeys: ApiKeyService;
  /** Team invites (spec 2.13): made by the team, accepted by a user. */
  invites: InviteService;
  /** The members of a team as the team itself manages them (spec 2.13). */
  memberAdmin: MemberAdminService;
  memberNotes: MemberNoteService;
  /** Meetings and logoffs (docs/workspace.md). */
  meetings: MeetingService;
  logoffs: LogoffService;
  /** The caller's own member record and the team's subscription. */
  teamMe: TeamMeService;
  /** The team itself as its members see and change it (spec 2.11). */
  teamSettings: TeamSettingsService;
  teamLogs: TeamLogList;
  groupAdmin: GroupAdminService;
  teamModules: TeamModuleService;
  /** The public plans (spec 2.12). */
  plans: PlanQueryService;
  /** The team's own API key administration. */
  apiKeyAdmin: ApiKeyAdminService;
  media: MediaService;
  /** Updates and deletes media (the edit routes, the deletion links and the folder rules). */
  mediaEdits: MediaEditService;
  folders: FolderService;
  /** The rate limiters' shared Redis connection (REDIS_URL); null: counters in memory. */
  redis: Redis | null;
  rateLimiter: RequestRateLimiter;
  /** Failed authentications per client address (API keys and authSecret); 429 past the budget. */
  authFailures: RequestRateLimiter;
  /** Failed sign-ins per account and per client address. */
  signInThrottles: { perAccount: RequestRateLimiter; perAddress: RequestRateLimiter };
  /** Uses of upload URLs, per URL and per team (they carry no key to limit). */
  uploadUrlLimits: { perUrl: RequestRateLimiter; perTeam: RequestRateLimiter };
  store: ObjectStore;
  /** The store the readers of media files go through: a small file kept in the database is read from there. */
  mediaContent: DatabaseFirstStore;
  pool: MediaPool;
  gate: AdmissionGate;
  uploads: UploadService;
  /** One upload from a route's hand-over to its result (Idempotency-Key, admission, metrics): every route that stores an upload calls it. */
  uploadUseCase: UploadUseCase;
  /** Resumable (tus) uploads. */
  tus: TusService;
  /** Commits media uploads (group commit); the media upload routes hand it to their MediaUploadTarget. */
  mediaCommitter: UploadCommitter;
  /** This instance's Prometheus metrics (GET /metrics), in a registry of its own. */
  metrics: Metrics;
  /** Folder rules (spec 2.2); started by Application once the routes are mounted, runOnce() callable directly. */
  folderSweeper: FolderRuleSweeper;
  /** A team's plan and subscriptions (spec 2.12, 2.14). */
  subscriptions: SubscriptionService;
  /** The subscription rules (ends, trials); started by Application, runOnce() callable directly. */
  subscriptionJob: SubscriptionJob;
  /** Leftovers of crashed uploads (issue 6.2) and expired idempotency keys; started by Application, runOnce() callable directly. */
  crashSweeper: CrashSweeper;
  /** Expired sessions, sign-in codes, OAuth states, verification tokens and notification deliveries; started by Application. */
  expiredRows: ExpiredRowsSweeper;
  /** Idempotency-Key claims and answers, shared by every instance through PostgreSQL. */
  idempotency: IdempotencyKeys;
  /** This process's instance id and boot id (issue 17.7); null in the CLI, which makes no reservations. */
  identity: InstanceIdentity | null;
  /** Automations (webhook targets) and their deliveries. */
  automations: AutomationService;
  /** Delivers outbox events to automations; started by Application (never by the CLI). */
  automationDispatcher: AutomationDispatcher;
  /** The service's mail (SMTP or the outbox); its retry job is started by Application. */
  mail: ManagedMailSender;
  /** Deletes teams (TEAM_DELETE) and drains the objects left to remove; its drain is started by Application. */
  teamDeletion: TeamDeletion;
  /** Verification action tokens (spec 2.7) and email verification; signs account export links only with the operator secret. */
  verification: VerificationService;
  /** Makes the thumbnails of image uploads (THUMBNAIL_* settings); started by Application. */
  thumbnailer: Thumbnailer;
  /** The low-priority child process the thumbnails are made in. */
  previews: PreviewProcess;
  /** Resized images on request, cached in the store (TRANSFORM_* settings). */
  transformer: ImageTransformer;
}

/** What only the server has: what the operator secret signs, and the count of served traffic. */
export interface ServerServices {
  /** Signs and checks the links to private media and to team and to-do files. */
  fileLinks: SignedLinks;
  /** Team files and to-do files (spec 2.4). */
  attachedFiles: AttachedFileService;
  todos: TodoService;
  /** Single-use upload URLs. */
  uploadUrls: UploadUrlService;
  /** ShareX deletion links. */
  deletionLinks: DeletionLinks;
  /** Requests and bytes served per team and day; the server stops it (its last counts written) before the database closes. */
  servedTraffic: ServedTrafficCounter;
  /** Penalty points, the worry box (its author tags are keyed by the operator secret), team tags and accesses (docs/workspace.md). */
  penaltyPoints: PenaltyPointService;
  worryBox: WorryBoxService;
  teamTags: TeamTagService;
  teamAccesses: TeamAccessService;
  accessAssignments: AccessAssignmentService;
}

/** The running server's services: what its routes and jobs are given. */
export interface Services extends CoreServices, ServerServices {}

export interface ComposeOptions {
  config: Config;
  logger: Logger;
  /** Migrated and seeded (openDomainDatabase). */
  orm: MikroORM;
  /** The server's instance identity (its reservations and idempotency claims carry it); null in the CLI. */
  identity: InstanceIdentity | null;
  /** Looks up portal domains' TXT records; the system's resolvers when absent (tests pass their own). */
  txtResolver?: TxtResolver;
}

/**
 * The composition root: builds every long-lived service once, wired to each other. With the
 * server's resolved operator secret, also what it signs (ServerServices); the CLI passes null.
 */
export async function composeServices(options: ComposeOptions & { authSecret: string }): Promise<Services>;
export async function composeServices(options: ComposeOptions & { authSecret: null }): Promise<CoreServices>;
export async function composeServices(options: ComposeOptions & { authSecret: string | null }): Promise<CoreServices | Services> {
  const core = await composeCoreServices(options);
  if (options.authSecret === null) return core;
  return { ...core, ...composeServerServices(core, options, options.authSecret) };
}

async function composeCoreServices(options: ComposeOptions & { authSecret: string | null }): Promise<CoreServices> {
  const { config, logger, orm, identity, authSecret } = options;
  const metrics = new Metrics();
  const redis = config.redisUrl ? await connectRedis(config.redisUrl, logger) : null;
  // One budget per client address for failed API keys and wrong authSecret values.
  const authFailures = new RequestRateLimiter({
    points: config.authFailureLimit.points,
    durationSeconds: config.authFailureLimit.durationSeconds,
    redis,
    keyPrefix: 'media-auth-fail',
    message: 'Too many failed authentications from this address, retry later',
  });
  const authenticator = new Authenticator({
    keys: new ApiKeyAuthenticator({
      orm,
      cacheSeconds: config.apiKeyCacheSeconds,
      onLookup: (found) => metrics.apiKeyLookups.inc({ result: found ? 'found' : 'missing' }),
    }),
    sessions: new SessionAuthenticator({
      orm, cacheSeconds: config.apiKeyCacheSeconds, ttlSeconds: config.accounts.sessionTtlSeconds,
      onRenewFailed: (error) => logger.warn({ err: error }, 'session renewal not written'),
    }),
    failures: authFailures,
  });
  const sessions = new SessionService({ orm, cache: authenticator, ttlSeconds: config.accounts.sessionTtlSeconds });
  const signInLimit = (points: number, keyPrefix: string) => new RequestRateLimiter({
    points, durationSeconds: config.accounts.signInLimit.durationSeconds, redis, keyPrefix,
    message: 'Too many failed sign-ins, retry later',
  });
  const signInThrottles = {
    perAccount: signInLimit(config.accounts.signInLimit.accountPoints, 'media-signin-account'),
    perAddress: signInLimit(config.accounts.signInLimit.addressPoints, 'media-signin-address'),
  };
  const teams = new TeamService({ orm, defaultPlan: config.defaultPlan });
  const media = new MediaService({
    orm, linkBaseUrl: config.cdnUrl ?? config.publicUrl, publicUrl: config.publicUrl, links: authSecret ? new SignedLinks({ secret: authSecret }) : null,
  });
  const store = await createObjectStore(config.storage, config.dataDir, { onS3Request: (operation) => metrics.s3Requests.inc({ operation }) });
  const mediaContent = new DatabaseFirstStore(store, new DatabaseObjectStore(orm));
  const editLog = logger.child({ component: 'media-edit' });
  // The edit routes, the deletion links and the folder rules delete alike.
  const mediaEdits = new MediaEditService({
    orm,
    store,
    media,
    purger: createCdnPurger(config.cdnPurgeUrl, editLog),
    linkBaseUrl: config.cdnUrl ?? config.publicUrl,
    logger: editLog,
  });
  const pool = new MediaPool({ threads: config.workerThreads, onError: (error) => logger.error({ err: error }, 'worker pool error') });
  const teamStates = new TeamStateCache({ load: (teamId) => teams.getStorageState(teamId), ttlMs: TEAM_STATE_CACHE_MS });
  const committer = new UploadCommitter({
    orm, media, storageLocation: store.location, groupCommit: new GroupCommit({ orm, maxBatch: GROUP_COMMIT_MAX_BATCH }),
    onCommitted: (upload) => {
      if (THUMBNAIL_SOURCE_TYPES.has(upload.contentType)) thumbnailer.wake();
    },
  });
  const xxhash = await loadXxhash();
  // As many strips at once as the pool has threads: each holds its image in memory, and more would only wait in the pool's queue.
  const stripper = new MetadataStripper({ store, pool, ...config.stripMetadata, concurrency: config.workerThreads });
  const uploads = new UploadService({
    orm, store, pool, xxhash, quota: new StorageQuota({ orm, owner: identity }), stripper, hashOffloadMinBytes: config.upload.hashOffloadMinBytes, teamStates,
    databaseFileMaxBytes: config.upload.databaseFileMaxBytes,
    idleTimeoutSeconds: config.upload.idleTimeoutSeconds,
    observer: { stage: (stage, seconds) => metrics.uploadStages.observe({ stage }, seconds) },
  });
  const idempotency = new IdempotencyKeys({ orm, owner: identity, logger: logger.child({ component: 'idempotency' }) });
  const gate = new AdmissionGate(config.upload);
  const previews = new PreviewProcess({
    logger: logger.child({ component: 'thumbnails' }),
    concurrency: config.thumbnails.concurrency,
    // On s3 the preview process reads the images from the bucket itself.
    ...(config.storage.driver === 's3' && { s3: config.storage.s3, onS3Request: (operation: string) => metrics.s3Requests.inc({ operation }) }),
  });
  const thumbnailer = new Thumbnailer({
    queue: new ThumbnailQueue(orm, identity), store: mediaContent, previews, settings: config.thumbnails, logger: logger.child({ component: 'thumbnails' }),
    uploadsWaiting: () => gate.waiting > 0,
    onOutcome: (outcome) => metrics.thumbnails.inc({ outcome }),
  });
  const transformer = new ImageTransformer({
    cache: new TransformCache(orm), store: mediaContent, pool, logger: logger.child({ component: 'transforms' }),
    settings: { ...config.transforms, maxSourceBytes: config.thumbnails.maxSourceBytes, maxPixels: config.thumbnails.maxPixels },
    onResult: (result) => metrics.transforms.inc({ result }),
  });
  const tus = new TusService({
    // No owner: a tus reservation belongs to the upload, not to the instance that made it (it outlives restarts until it expires).
    orm, store, resumable: createResumableStore(store), quota: new StorageQuota({ orm, owner: null }), teamStates, committer, stripper, xxhash,
    expirySeconds: config.tusExpirySeconds, maxSize: MAX_BODY_BYTES.multipart,
    makerMayUpload: (teamId, maker) => makerMayUpload(authenticator, teamId, maker),
    observer: {
      receiving: (delta) => metrics.tusUploadsInProgress.inc(delta),
      resumedBytes: (bytes) => metrics.tusResumedBytes.inc(bytes),
      completed: () => metrics.tusCompleted.inc(),
    },
  });
  const automationDispatcher = new AutomationDispatcher({
    orm, logger: logger.child({ component: 'automations' }), settings: config.automations,
  });
  const subscriptions = new SubscriptionService({ orm });
  const notificationPreferences = new NotificationPreferenceService({ orm });
  const notificationDeliveries = new NotificationDeliveries({ orm, retentionDays: config.notificationRetentionDays });
  const mail = await createMailSender({
    orm, logger, settings: config.mail,
    deliveries: new MailDeliveries({ deliveries: notificationDeliveries, preferences: notificationPreferences, provider: config.mail.provider }),
  });
  const teamDeletionLog = logger.child({ component: 'team-deletion' });
  const teamDeletion = new TeamDeletion({
    orm, store, resumable: createResumableStore(store), logger: teamDeletionLog,
    purger: createCdnPurger(config.cdnPurgeUrl, teamDeletionLog), linkBaseUrl: config.cdnUrl ?? config.publicUrl,
  });
  const verification = new VerificationService({
    orm, mail, publicUrl: config.publicUrl, teamDeletion, authCache: authenticator, logger: logger.child({ component: 'verification' }),
    exportLinks: authSecret ? new SignedLinks({ secret: authSecret, label: ACCOUNT_EXPORT_KEY_LABEL, ttlSeconds: ACCOUNT_EXPORT_TTL_SECONDS }) : null,
  });
  const memberAdmin = new MemberAdminService({ orm, authCache: authenticator, upcomingMeetings: new UpcomingMeetings({ orm }) });
  const services: CoreServices = {
    orm,
    authenticator,
    sessions,
    credentials: new CredentialService({
      orm, sessions, throttles: signInThrottles, signUpEnabled: config.accounts.signUpEnabled,
      passwords: new PasswordHasher({ cost: config.accounts.passwordHashCost }),
      // The user exists and is signed in by now: a verification mail that could not be queued is logged (the user can ask
      // for another), never turned into an error answer that would make the client sign up again into a 409.
      onSignedUp: (userId) => verification.sendEmailVerification(userId)
        .catch((error: unknown) => logger.error({ err: error, userId }, 'email verification mail not queued')),
    }),
    profiles: new UserProfileService({ orm, sessions, authCache: authenticator, usernameCooldownSeconds: config.accounts.usernameChangeCooldownSeconds }),
    signInThrottles,
    accounts: new AccountService({ orm }),
    oauth: new OAuthSignInService({
      orm, sessions, publicUrl: config.publicUrl, corsOrigins: config.corsOrigins,
      providers: [
        ...(config.oauth.discord ? [new DiscordProvider(config.oauth.discord)] : []),
        ...(config.oauth.google ? [new GoogleProvider(config.oauth.google)] : []),
      ],
    }),
    launcherCodes: new LauncherCodeService({ orm, sessions }),
    notificationPreferences,
    notificationDeliveries,
    discordStatuses: new DiscordStatusService({ orm, guildId: config.oauth.discord?.guildId ?? null }),
    teams,
    teamStates,
    members: new MemberService({ orm, authCache: authenticator }),
    apiKeys: new ApiKeyService({ orm, authCache: authenticator }),
    invites: new InviteService({ orm, authCache: authenticator }),
    memberAdmin,
    memberNotes: new MemberNoteService({ orm }),
    meetings: new MeetingService({ orm }),
    logoffs: new LogoffService({ orm }),
    teamMe: new TeamMeService({ orm, members: memberAdmin, subscriptions }),
    teamSettings: new TeamSettingsService({ orm, authCache: authenticator, teamStates }),
    teamLogs: new TeamLogList({ orm }),
    groupAdmin: new GroupAdminService({ orm, authCache: authenticator }),
    teamModules: new TeamModuleService({ orm }),
    plans: new PlanQueryService({ orm }),
    apiKeyAdmin: new ApiKeyAdminService({ orm, authCache: authenticator }),
    media,
    mediaEdits,
    folders: new FolderService({ orm }),
    redis,
    rateLimiter: new RequestRateLimiter({
      points: config.rateLimit.points,
      durationSeconds: config.rateLimit.durationSeconds,
      redis,
    }),
    store,
    mediaContent,
    pool,
    gate,
    uploads,
    uploadUseCase: new UploadUseCase({ gate, uploads, metrics, idempotency }),
    tus,
    mediaCommitter: committer,
    authFailures,
    uploadUrlLimits: uploadUrlLimiters(config, redis),
    metrics,
    folderSweeper: new FolderRuleSweeper({ orm, edits: mediaEdits, logger: logger.child({ component: 'folder-sweep' }) }),
    subscriptions,
    subscriptionJob: new SubscriptionJob({ orm, subscriptions, logger: logger.child({ component: 'subscriptions' }) }),
    crashSweeper: new CrashSweeper({
      orm, store, logger: logger.child({ component: 'crash-sweep' }), minAgeSeconds: config.crashSweepMinAgeSeconds,
      liveUploads: () => uploads.liveUploads(), owner: identity, idempotencyKeys: idempotency,
      tus: { sweepExpired: (now) => tus.sweepExpired(now), unfinishedKeys: () => tus.uploads.unfinishedKeys() },
    }),
    idempotency,
    expiredRows: new ExpiredRowsSweeper({ orm, notificationDeliveries, logger: logger.child({ component: 'expired-rows' }) }),
    identity,
    automations: new AutomationService({
      orm, allowPrivateTargets: config.automations.allowPrivateTargets, wake: () => automationDispatcher.wake(),
    }),
    automationDispatcher,
    mail,
    teamDeletion,
    verification,
    thumbnailer,
    previews,
    transformer,
    ...composeNewsLinkPortal({ orm, txtResolver: options.txtResolver }),
  };
  services.metrics.observe({ gate: services.gate, pool });
  return services;
}

function composeServerServices(core: CoreServices, options: ComposeOptions, authSecret: string): ServerServices {
  const { config, logger } = options;
  const fileLinks = new SignedLinks({ secret: authSecret });
  const attachedFiles = new AttachedFileService({ orm: core.orm, store: core.store, links: fileLinks, publicUrl: config.publicUrl, logger });
  return {
    fileLinks,
    attachedFiles,
    todos: new TodoService({ orm: core.orm, files: attachedFiles }),
    uploadUrls: new UploadUrlService({
      orm: core.orm,
      signer: new SignedLinks({ secret: authSecret, label: UPLOAD_URL_KEY_LABEL, ttlSeconds: UPLOAD_URL_MAX_SECONDS }),
      publicUrl: config.publicUrl,
    }),
    deletionLinks: new DeletionLinks({ secret: authSecret, publicUrl: config.publicUrl }),
    servedTraffic: new ServedTrafficCounter({ orm: core.orm, logger: logger.child({ component: 'served-traffic' }) }),
    penaltyPoints: new PenaltyPointService({ orm: core.orm }),
    worryBox: new WorryBoxService({ orm: core.orm, authorTags: new WorryBoxAuthorTags(authSecret) }),
    teamTags: new TeamTagService({ orm: core.orm }),
    teamAccesses: new TeamAccessService({ orm: core.orm }),
    accessAssignments: new AccessAssignmentService({ orm: core.orm }),
  };
}

function uploadUrlLimiters(config: Config, redis: Redis | null): CoreServices['uploadUrlLimits'] {
  const { perUrlPoints, perTeamPoints, durationSeconds } = config.uploadUrlLimit;
  const limiter = (points: number, keyPrefix: string, message: string) =>
    new RequestRateLimiter({ points, durationSeconds, redis, keyPrefix, message });
  return {
    perUrl: limiter(perUrlPoints, 'media-url-rl', 'Too many attempts with this upload URL, retry later'),
    perTeam: limiter(perTeamPoints, 'media-url-team-rl', 'Too many upload URL uses for this team, retry later'),
  };
}

/** Stops every service's jobs and closes its connections; the ORM last but for the instance identity. */
export async function closeServices(services: CoreServices & Partial<ServerServices>): Promise<void> {
  // The last served counts are written while the database is still open.
  await services.servedTraffic?.stop();
  services.metrics.close();
  // The server's jobs (stopping one that never started, as in the CLI, does nothing).
  await new BackgroundJobs(services).stop();
  services.idempotency.close();
  await services.automationDispatcher.stop();
  await services.transformer.stop();
  await services.previews.close();
  services.redis?.disconnect();
  await services.pool.close();
  await services.store.close();
  await services.orm.close();
  // Last: no reservation of this process is made or released after it.
  await services.identity?.release();
}
