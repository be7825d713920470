import { join } from 'node:path';
import type { MikroORM } from '@mikro-orm/postgresql';
import { ApiKeyAuthenticator } from './auth/api-key-authenticator.ts';
import { AUTH_CHANGES_CHANNEL, parseAuthChange } from './auth/auth-changes.ts';
import { Authenticator } from './auth/authenticator.ts';
import { SessionAuthenticator } from './auth/session-authenticator.ts';
import { makerMayUpload } from './auth/upload-maker.ts';
import { SessionService } from './domain/sessions/session.service.ts';
import { CredentialService } from './domain/users/credential.service.ts';
import { UserProfileService } from './domain/users/user-profile.service.ts';
import { authRoutes } from './http/routes/users/auth-routes.ts';
import { userRoutes } from './http/routes/users/user-routes.ts';
import { userOperatorRoutes } from './http/routes/operator/user-operator-routes.ts';
import { AccountService } from './domain/accounts/account.service.ts';
import { OAuthSignInService } from './domain/accounts/oauth-sign-in.service.ts';
import { DiscordProvider } from './auth/oauth/discord-provider.ts';
import { GoogleProvider } from './auth/oauth/google-provider.ts';
import { InviteService } from './domain/invites/invite.service.ts';
import { oauthRoutes } from './http/routes/users/oauth-routes.ts';
import { accountRoutes } from './http/routes/users/account-routes.ts';
import { launcherRoutes } from './http/routes/users/launcher-routes.ts';
import { LauncherCodeService } from './domain/launcher/launcher-code.service.ts';
import { ExpiredRowsSweeper } from './domain/jobs/expired-rows-sweep.ts';
import { NotificationPreferenceService } from './domain/notifications/notification-preference.service.ts';
import { announceGeneratedSecret, resolveAuthSecret } from './bootstrap/auth-secret.ts';
import { InstanceIdentity } from './bootstrap/instance-identity.ts';
import type { Config } from './config/config.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './db/embedded-postgres.ts';
import { NotificationListener } from './db/notification-listener.ts';
import { isDatabaseUnavailable } from './db/database-errors.ts';
import { initOrm, migrate } from './db/orm.ts';
import { seedPlans } from './db/seed.ts';
import { checkDefaultPlan } from './domain/plans/default-plan.ts';
import { ApiKeyService } from './domain/api-keys/api-key.service.ts';
import { FolderRuleSweeper } from './domain/folders/folder-rule-sweep.ts';
import { SubscriptionJob } from './domain/subscriptions/subscription-job.ts';
import { SubscriptionService } from './domain/subscriptions/subscription.service.ts';
import { createCdnPurger } from './domain/media/cdn-purge.ts';
import { MediaEditService } from './domain/media/media-edit.service.ts';
import { MediaService } from './domain/media/media.service.ts';
import { MemberService } from './domain/members/member.service.ts';
import { TEAM_LIMITS_CHANNEL, TeamStateCache } from './domain/teams/team-state-cache.ts';
import { TeamService } from './domain/teams/team.service.ts';
import { serviceUnavailable } from './errors/errors.ts';
import { Router } from './http/router.ts';
import { fileServingRoutes } from './http/routes/media/file-serving-routes.ts';
import { folderRoutes } from './http/routes/media/folder-routes.ts';
import { libraryRoutes } from './http/routes/media/library-routes.ts';
import { mediaEditRoutes } from './http/routes/media/media-edit-routes.ts';
import { uploadRoutes } from './http/routes/media/upload-routes.ts';
import { uploadUrlRoutes } from './http/routes/media/upload-url-routes.ts';
import { SignedLinks } from './domain/media/signed-links.ts';
import { DeletionLinks } from './domain/media/deletion-links.ts';
import { UPLOAD_URL_KEY_LABEL, UPLOAD_URL_MAX_SECONDS, UploadUrlService } from './domain/upload-urls/upload-url.service.ts';
import { AdmissionGate } from './limits/admission-gate.ts';
import { RequestRateLimiter } from './limits/rate-limiter.ts';
import { loadXxhash } from './media/content-hash.ts';
import { MediaPool } from './pool/media-pool.ts';
import { ServedTrafficCounter } from './domain/media/served-traffic.ts';
import { createObjectStore, createResumableStore } from './storage/create-object-store.ts';
import { StorageHealth } from './storage/storage-health.ts';
import { DatabaseHealth } from './db/database-health.ts';
import { ConfigError } from './config/config.ts';
import type { ObjectStore } from './storage/object-store.ts';
import { StorageQuota } from './domain/uploads/storage-quota.ts';
import { CrashSweeper } from './domain/uploads/crash-sweeper.ts';
import { IdempotencyKeys } from './domain/idempotency/idempotency-keys.ts';
import { GroupCommit } from './domain/uploads/group-commit.ts';
import { UploadCommitter } from './domain/uploads/upload-commit.ts';
import { MAX_BODY_BYTES, UploadService } from './upload/upload-service.ts';
import { TusService } from './upload/tus/tus-service.ts';
import { tusRoutes } from './http/routes/media/tus-routes.ts';
import { teamFileRoutes } from './http/routes/teams/team-file-routes.ts';
import { operatorRoutes } from './http/routes/operator/operator-routes.ts';
import { healthRoutes, type Lifecycle } from './http/routes/health.ts';
import { mediaRoutes } from './http/routes/media/media-routes.ts';
import { HttpServer, type ListenMode } from './http/server.ts';
import { accessLogger } from './http/access-log.ts';
import { Cors } from './http/cors.ts';
import { rootRoutes } from './http/routes/root.ts';
import { MemoryBudget } from './http/memory-budget.ts';
import { unreachableLinksWarning } from './config/public-url.ts';
import type { Logger } from './logging/logger.ts';
import { metricsRoutes } from './http/routes/metrics-routes.ts';
import { Metrics } from './observability/metrics.ts';
import { AutomationDispatcher } from './automations/dispatcher.ts';
import { AUTOMATION_EVENTS_CHANNEL } from './domain/automations/automation-channel.ts';
import { AutomationService } from './domain/automations/automation.service.ts';
import { automationRoutes } from './http/routes/automations/automation-routes.ts';
import { teamAdminRoutes } from './http/routes/teams/team-admin-routes.ts';
import { automationOperatorRoutes } from './http/routes/operator/automation-operator-routes.ts';
import { subscriptionOperatorRoutes } from './http/routes/operator/subscription-operator-routes.ts';
import { openApiRoutes } from './http/openapi/openapi-routes.ts';
import { createMailSender, type ManagedMailSender } from './mail/create-mail-sender.ts';
import { TeamDeletion } from './domain/teams/team-deletion.ts';
import { VerificationService } from './domain/verification/verification.service.ts';
import { ACCOUNT_EXPORT_KEY_LABEL, ACCOUNT_EXPORT_TTL_SECONDS } from './domain/users/account-export.ts';
import { verificationRoutes } from './http/routes/users/verification-routes.ts';

/** After the grace period, how long aborted uploads and the responses still being written may take. */
const ABORT_WAIT_MS = 10_000;
const RESPONSE_WAIT_MS = 5_000;
/** Most uploads of one team committed in one statement (group commit). */
const GROUP_COMMIT_MAX_BATCH = 64;
/** Cached team limits are dropped on change (TEAM_LIMITS_CHANNEL); this only bounds a missed notification. */
const TEAM_STATE_CACHE_MS = 60_000;

export interface Services {
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
  teams: TeamService;
  /** Team limits and storage counters for uploads; invalidated through TEAM_LIMITS_CHANNEL. */
  teamStates: TeamStateCache;
  members: MemberService;
  apiKeys: ApiKeyService;
  media: MediaService;
  rateLimiter: RequestRateLimiter;
  /** Failed authentications per client address (API keys and authSecret); 429 past the budget. */
  authFailures: RequestRateLimiter;
  /** Failed sign-ins per account and per client address. */
  signInThrottles: { perAccount: RequestRateLimiter; perAddress: RequestRateLimiter };
  /** Uses of upload URLs, per URL and per team (they carry no key to limit). */
  uploadUrlLimits: { perUrl: RequestRateLimiter; perTeam: RequestRateLimiter };
  store: ObjectStore;
  pool: MediaPool;
  gate: AdmissionGate;
  uploads: UploadService;
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
  /** Expired sessions, sign-in codes, OAuth states and verification tokens; started by Application. */
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
  /** Verification action tokens (spec 2.7) and email verification. */
  verification: VerificationService;
}

/** Database, migrations, seed data and the domain services: what both the server and the CLI need. */
export class Backend {
  readonly services: Services;
  readonly databaseUrl: string;
  private readonly embedded: EmbeddedDatabase | null;

  private constructor(services: Services, databaseUrl: string, embedded: EmbeddedDatabase | null) {
    this.services = services;
    this.databaseUrl = databaseUrl;
    this.embedded = embedded;
  }

  /** `claimIdentity`: the server claims its instance id (InstanceIdentity) for the reservations it makes; the CLI does not. */
  /** `authSecret`: the resolved operator secret (the server's); without it, account export links cannot be signed (the CLI). */
  /** `takeOverEmbeddedDatabase` (default true): see startEmbeddedPostgres' `takeOver`. */
  static async open(
    config: Config, logger: Logger, options: { claimIdentity?: boolean; authSecret?: string; takeOverEmbeddedDatabase?: boolean } = {},
  ): Promise<Backend> {
    const embedded = config.databaseUrl
      ? null
      : await startEmbeddedPostgres({
        dataDir: config.dataDir, databaseName: 'media', takeOver: options.takeOverEmbeddedDatabase, log: (line) => logger.debug({ postgres: line }),
      });
    const databaseUrl = config.databaseUrl ?? embedded!.url;
    let orm: MikroORM | null = null;
    let identity: InstanceIdentity | null = null;
    try {
      orm = await initOrm({ databaseUrl, poolSize: config.databasePoolSize, logger });
      await migrate(orm);
      await seedPlans(orm);
      await checkDefaultPlan(orm, config.defaultPlan);
      if (options.claimIdentity) {
        identity = await InstanceIdentity.claim({ databaseUrl, dataDir: config.dataDir, configured: config.instanceId, logger });
        logger.info({ instanceId: identity.instanceId, bootId: identity.bootId }, 'instance identity claimed');
      }
      const metrics = new Metrics();
      // One budget per client address for failed API keys and wrong authSecret values.
      const authFailures = new RequestRateLimiter({
        points: config.authFailureLimit.points,
        durationSeconds: config.authFailureLimit.durationSeconds,
        redisUrl: config.redisUrl,
        logger,
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
        points, durationSeconds: config.accounts.signInLimit.durationSeconds, redisUrl: config.redisUrl, logger, keyPrefix,
        message: 'Too many failed sign-ins, retry later',
      });
      const signInThrottles = {
        perAccount: signInLimit(config.accounts.signInLimit.accountPoints, 'media-signin-account'),
        perAddress: signInLimit(config.accounts.signInLimit.addressPoints, 'media-signin-address'),
      };
      const teams = new TeamService(orm, { defaultPlan: config.defaultPlan });
      const media = new MediaService({ orm, linkBaseUrl: config.cdnUrl ?? config.publicUrl });
      const store = await createObjectStore(config.storage, config.dataDir);
      const sweepLog = logger.child({ component: 'folder-sweep' });
      // Deletes exactly as DELETE /delete/{id} (media-edit-routes.ts builds its own the same way).
      const edits = new MediaEditService({
        orm,
        store,
        media,
        purger: createCdnPurger(config.cdnPurgeUrl, sweepLog),
        linkBaseUrl: config.cdnUrl ?? config.publicUrl,
        logger: sweepLog,
      });
      const pool = new MediaPool({ threads: config.workerThreads, onError: (error) => logger.error({ err: error }, 'worker pool error') });
      const teamStates = new TeamStateCache({ load: (teamId) => teams.getStorageState(teamId), ttlMs: TEAM_STATE_CACHE_MS });
      const committer = new UploadCommitter({ orm, media, groupCommit: new GroupCommit({ orm, maxBatch: GROUP_COMMIT_MAX_BATCH }) });
      const xxhash = await loadXxhash();
      const uploads = new UploadService({
        orm, store, pool, xxhash, quota: new StorageQuota(orm, identity), hashOffloadMinBytes: config.upload.hashOffloadMinBytes, teamStates,
        idleTimeoutSeconds: config.upload.idleTimeoutSeconds,
        observer: { stage: (stage, seconds) => metrics.uploadStages.observe({ stage }, seconds) },
      });
      const idempotency = new IdempotencyKeys({ orm, owner: identity, logger: logger.child({ component: 'idempotency' }) });
      const tus = new TusService({
        // No owner: a tus reservation belongs to the upload, not to the instance that made it (it outlives restarts until it expires).
        orm, store, resumable: createResumableStore(store), quota: new StorageQuota(orm, null), teamStates, committer, xxhash,
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
      const subscriptions = new SubscriptionService(orm);
      const mail = createMailSender(orm, logger, config.mail);
      const teamDeletionLog = logger.child({ component: 'team-deletion' });
      const teamDeletion = new TeamDeletion({
        orm, store, resumable: createResumableStore(store), logger: teamDeletionLog,
        purger: createCdnPurger(config.cdnPurgeUrl, teamDeletionLog), linkBaseUrl: config.cdnUrl ?? config.publicUrl,
      });
      const verification = new VerificationService({
        orm, mail, publicUrl: config.publicUrl, teamDeletion, authCache: authenticator, logger: logger.child({ component: 'verification' }),
        exportLinks: options.authSecret
          ? new SignedLinks({ secret: options.authSecret, label: ACCOUNT_EXPORT_KEY_LABEL, ttlSeconds: ACCOUNT_EXPORT_TTL_SECONDS })
          : null,
      });
      const services: Services = {
        orm,
        authenticator,
        sessions,
        credentials: new CredentialService({
          orm, sessions, throttles: signInThrottles, signUpEnabled: config.accounts.signUpEnabled,
          // The user exists and is signed in by now: a verification mail that could not be queued is logged (the user can ask
          // for another), never turned into an error answer that would make the client sign up again into a 409.
          onSignedUp: (userId) => verification.sendEmailVerification(userId)
            .catch((error: unknown) => logger.error({ err: error, userId }, 'email verification mail not queued')),
        }),
        profiles: new UserProfileService({ orm, sessions, authCache: authenticator, usernameCooldownSeconds: config.accounts.usernameChangeCooldownSeconds }),
        signInThrottles,
        accounts: new AccountService(orm),
        oauth: new OAuthSignInService({
          orm, sessions, publicUrl: config.publicUrl, corsOrigins: config.corsOrigins,
          providers: [
            ...(config.oauth.discord ? [new DiscordProvider(config.oauth.discord)] : []),
            ...(config.oauth.google ? [new GoogleProvider(config.oauth.google)] : []),
          ],
        }),
        teams,
        teamStates,
        members: new MemberService(orm, authenticator),
        apiKeys: new ApiKeyService(orm, authenticator),
        media,
        rateLimiter: new RequestRateLimiter({
          points: config.rateLimit.points,
          durationSeconds: config.rateLimit.durationSeconds,
          redisUrl: config.redisUrl,
          logger,
        }),
        store,
        pool,
        gate: new AdmissionGate(config.upload),
        uploads,
        tus,
        mediaCommitter: committer,
        authFailures,
        uploadUrlLimits: uploadUrlLimiters(config, logger),
        metrics,
        folderSweeper: new FolderRuleSweeper({ orm, edits, logger: sweepLog }),
        subscriptions,
        subscriptionJob: new SubscriptionJob({ orm, subscriptions, logger: logger.child({ component: 'subscriptions' }) }),
        crashSweeper: new CrashSweeper({
          orm, store, logger: logger.child({ component: 'crash-sweep' }), minAgeSeconds: config.crashSweepMinAgeSeconds,
          liveUploads: () => uploads.liveUploads(), owner: identity, idempotencyKeys: idempotency,
          tus: { sweepExpired: (now) => tus.sweepExpired(now), unfinishedKeys: () => tus.uploads.unfinishedKeys() },
        }),
        idempotency,
        expiredRows: new ExpiredRowsSweeper({ orm, logger: logger.child({ component: 'expired-rows' }) }),
        identity,
        automations: new AutomationService({
          orm, allowPrivateTargets: config.automations.allowPrivateTargets, wake: () => automationDispatcher.wake(),
        }),
        automationDispatcher,
        mail,
        teamDeletion,
        verification,
      };
      services.metrics.observe({ gate: services.gate, pool });
      return new Backend(services, databaseUrl, embedded);
    } catch (error) {
      await identity?.release();
      await orm?.close().catch(() => undefined);
      await embedded?.stop().catch(() => undefined);
      throw error;
    }
  }

  async close(): Promise<void> {
    this.services.metrics.close();
    await this.services.folderSweeper.stop();
    await this.services.subscriptionJob.stop();
    await this.services.crashSweeper.stop();
    this.services.idempotency.close();
    await this.services.automationDispatcher.stop();
    await this.services.mail.stop();
    await this.services.teamDeletion.stop();
    await this.services.rateLimiter.close();
    await this.services.authFailures.close();
    await this.services.signInThrottles.perAccount.close();
    await this.services.signInThrottles.perAddress.close();
    await this.services.uploadUrlLimits.perUrl.close();
    await this.services.uploadUrlLimits.perTeam.close();
    await this.services.pool.close();
    await this.services.store.close();
    await this.services.orm.close();
    // Last: no reservation of this process is made or released after it.
    await this.services.identity?.release();
    await this.embedded?.stop();
  }
}

function uploadUrlLimiters(config: Config, logger: Logger): Services['uploadUrlLimits'] {
  const { perUrlPoints, perTeamPoints, durationSeconds } = config.uploadUrlLimit;
  const limiter = (points: number, keyPrefix: string, message: string) =>
    new RequestRateLimiter({ points, durationSeconds, redisUrl: config.redisUrl, logger, keyPrefix, message });
  return {
    perUrl: limiter(perUrlPoints, 'media-url-rl', 'Too many attempts with this upload URL, retry later'),
    perTeam: limiter(perTeamPoints, 'media-url-team-rl', 'Too many upload URL uses for this team, retry later'),
  };
}

/**
 * What a paused body holds in memory before spooling to disk: 1 MiB (two uWS reads) per request
 * always, and up to 3 MiB more per request from 16 MiB shared by all of them, so that a 2 MiB upload
 * from a fast client does not go through the spool's synchronous writes and reads, while 64 uploads
 * in flight still hold at most 64 MiB + 16 MiB (docs/performance.md, "The body spool").
 */
const BODY_MEMORY_BYTES = 1024 * 1024;
const BODY_EXTRA_BYTES_PER_REQUEST = 3 * 1024 * 1024;
const BODY_SHARED_BYTES = 16 * 1024 * 1024;

/**
 * The running service: listens first (so /healthz can answer 503 while the
 * database starts), then opens the backend and mounts the routes.
 */
export class Application {
  private config: Config;
  private readonly logger: Logger;
  private readonly router = new Router();
  private readonly server: HttpServer;
  private lifecycle: Lifecycle = 'starting';
  private backend: Backend | null = null;
  private servedTraffic: ServedTrafficCounter | null = null;
  private listener: NotificationListener | null = null;
  private automationListener: NotificationListener | null = null;
  private storageHealth: StorageHealth | null = null;
  private databaseHealth: DatabaseHealth | null = null;
  private teamLimitsListener: NotificationListener | null = null;
  private boundPort = 0;
  private readonly listenMode: ListenMode;

  /** `listen.shared`: one of the HTTP_PROCESSES service processes, sharing HOST:PORT with the others (src/start/supervisor.ts). */
  constructor(config: Config, logger: Logger, options: { listen?: ListenMode } = {}) {
    this.config = config;
    this.logger = logger;
    this.listenMode = options.listen ?? {};
    const dependencies = (): Record<string, string | null> => ({
      ...(this.databaseHealth ? { database: this.databaseHealth.status.cause } : {}),
      ...(this.storageHealth ? { storage: this.storageHealth.status.cause } : {}),
    });
    for (const route of [...healthRoutes(() => this.lifecycle, dependencies), ...rootRoutes()]) this.router.add(route);
    const cors = new Cors(config.corsOrigins);
    this.server = new HttpServer({
      router: this.router,
      logger,
      onResponse: (route, status, messageKey) => this.backend?.services.metrics.recordResponse(route, status, messageKey),
      admit: (request) => {
        if (this.lifecycle !== 'ready' && request.path !== '/healthz') throw serviceUnavailable(`The service is ${this.lifecycle}`);
      },
      bodyBuffering: {
        memoryBytes: BODY_MEMORY_BYTES,
        extra: { perBody: BODY_EXTRA_BYTES_PER_REQUEST, shared: new MemoryBudget(BODY_SHARED_BYTES) },
        spoolDirectory: join(config.dataDir, 'spool'),
      },
      // A database that is down or restarting is worth a retry, not a 500; the pool reconnects once it is back.
      mapError: (error) => {
        if (!isDatabaseUnavailable(error)) return error;
        this.databaseHealth?.suspect();
        return serviceUnavailable('The database is temporarily unavailable, retry later', 5, error);
      },
      cors: cors.enabled ? cors : undefined,
      trustedProxies: config.trustedProxies,
      onComplete: config.accessLog ? accessLogger(logger.child({ component: 'access' })) : undefined,
    });
  }

  get port(): number {
    return this.boundPort;
  }

  /** Every route mounted so far (all of them once started). */
  get routes(): { method: string; pattern: string }[] {
    return this.router.list();
  }

  get services(): Services {
    if (!this.backend) throw new Error('the application has not started');
    return this.backend.services;
  }

  private async listen(): Promise<void> {
    this.boundPort = await this.server.listen(this.config.host, this.config.port, this.listenMode);
    if (this.config.port === 0) {
      // PORT=0 picks a free port; links derived from the address must name the real one.
      this.config = { ...this.config, port: this.boundPort, publicUrl: this.config.publicUrl.replace(/:0$/, `:${this.boundPort}`) };
    }
    this.logger.info({ host: this.config.host, port: this.boundPort }, 'listening; starting up');
    const linksWarning = unreachableLinksWarning(this.config);
    if (linksWarning) this.logger.warn({ publicUrl: this.config.publicUrl }, linksWarning);
  }

  async start(): Promise<void> {
    // A process sharing the port joins once ready: earlier, it would answer its share of new connections with 503 while its siblings could serve them.
    if (!this.listenMode.shared) await this.listen();
    try {
      const { secret, generated } = await resolveAuthSecret(this.config.authSecret, this.config.dataDir);
      if (generated) announceGeneratedSecret(secret, this.config.dataDir);
      this.backend = await Backend.open(this.config, this.logger, { claimIdentity: true, authSecret: secret });
      const { services } = this.backend;
      this.databaseHealth = new DatabaseHealth({ databaseUrl: this.backend.databaseUrl, logger: this.logger.child({ component: 'database-health' }) });
      await this.databaseHealth.check();
      this.databaseHealth.start();
      await this.checkStorage(services.store);
      this.servedTraffic = new ServedTrafficCounter({ orm: services.orm, logger: this.logger.child({ component: 'served-traffic' }) });
      this.listener = new NotificationListener({
        databaseUrl: this.backend.databaseUrl,
        channel: AUTH_CHANGES_CHANNEL,
        logger: this.logger,
        onNotification: (payload) => {
          const change = parseAuthChange(payload);
          if ('userId' in change) services.authenticator.invalidateUser(change.userId);
          else services.authenticator.invalidateTeam(change.teamId);
        },
        onReconnect: () => services.authenticator.invalidateAll(),
      });
      await this.listener.start();
      // After the listener: a key made between the two is announced to it, and reloads its team's prefixes.
      await services.authenticator.load();
      // Outbox commits (any instance) wake this instance's dispatcher at once.
      this.automationListener = new NotificationListener({
        databaseUrl: this.backend.databaseUrl,
        channel: AUTOMATION_EVENTS_CHANNEL,
        logger: this.logger,
        onNotification: () => services.automationDispatcher.wake(),
        onReconnect: () => services.automationDispatcher.wake(),
      });
      await this.automationListener.start();
      // A team's (payload: its id) or a plan's (payload: '') limits changed, on any instance.
      this.teamLimitsListener = new NotificationListener({
        databaseUrl: this.backend.databaseUrl,
        channel: TEAM_LIMITS_CHANNEL,
        logger: this.logger,
        onNotification: (teamId) => (teamId ? services.teamStates.invalidateTeam(teamId) : services.teamStates.invalidateAll()),
        onReconnect: () => services.teamStates.invalidateAll(),
      });
      await this.teamLimitsListener.start();
      const deletionLinks = new DeletionLinks({ secret, publicUrl: this.config.publicUrl });
      const routes = [
        ...operatorRoutes({ ...services, authSecret: secret, maxJsonBodyBytes: this.config.maxJsonBodyBytes }),
        ...mediaRoutes(services),
        ...uploadRoutes({ ...services, deletionLinks }),
        ...uploadUrlRoutes({
          ...services,
          uploadUrls: new UploadUrlService({
            orm: services.orm,
            signer: new SignedLinks({ secret, label: UPLOAD_URL_KEY_LABEL, ttlSeconds: UPLOAD_URL_MAX_SECONDS }),
            publicUrl: this.config.publicUrl,
          }),
          maxJsonBodyBytes: this.config.maxJsonBodyBytes,
        }),
        ...tusRoutes(services),
        ...folderRoutes(services, this.config),
        ...fileServingRoutes(services, { ...this.config, authSecret: secret }, { servedTraffic: this.servedTraffic }),
        ...libraryRoutes(services, this.config),
        ...mediaEditRoutes(services, this.config, this.logger, deletionLinks),
        ...metricsRoutes({ metrics: services.metrics, token: this.config.metricsToken }),
        ...automationRoutes(services, this.config),
        ...teamAdminRoutes(services, { maxJsonBodyBytes: this.config.maxJsonBodyBytes, authSecret: secret }),
        ...teamFileRoutes(services, { maxJsonBodyBytes: this.config.maxJsonBodyBytes, authSecret: secret, publicUrl: this.config.publicUrl, logger: this.logger }),
        ...automationOperatorRoutes({
          automations: services.automations, authSecret: secret, authFailures: services.authFailures, maxJsonBodyBytes: this.config.maxJsonBodyBytes,
        }),
        ...subscriptionOperatorRoutes({
          subscriptions: services.subscriptions, authSecret: secret, authFailures: services.authFailures, maxJsonBodyBytes: this.config.maxJsonBodyBytes,
        }),
        ...authRoutes({ ...services, maxJsonBodyBytes: this.config.maxJsonBodyBytes }),
        ...userRoutes({ ...services, notificationPreferences: new NotificationPreferenceService(services.orm), maxJsonBodyBytes: this.config.maxJsonBodyBytes }),
        ...oauthRoutes({ ...services, maxJsonBodyBytes: this.config.maxJsonBodyBytes }),
        ...accountRoutes({ ...services, invites: new InviteService(services.orm, services.authenticator), maxJsonBodyBytes: this.config.maxJsonBodyBytes }),
        ...verificationRoutes({ ...services, maxJsonBodyBytes: this.config.maxJsonBodyBytes }),
        ...launcherRoutes({
          ...services, launcherCodes: new LauncherCodeService({ orm: services.orm, sessions: services.sessions }), maxJsonBodyBytes: this.config.maxJsonBodyBytes,
        }),
        ...userOperatorRoutes({ ...services, authSecret: secret, maxJsonBodyBytes: this.config.maxJsonBodyBytes }),
        ...openApiRoutes({ publicUrl: this.config.publicUrl }),
      ];
      for (const route of routes) this.router.add(route);
      services.folderSweeper.start();
      services.subscriptionJob.start();
      services.crashSweeper.start();
      services.expiredRows.start();
      services.automationDispatcher.start();
      services.mail.start();
      services.teamDeletion.start();
      if (this.listenMode.shared) await this.listen();
      this.lifecycle = 'ready';
      this.logger.info({ port: this.boundPort }, 'ready');
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  /**
   * Storage settings that the storage refuses stop start-up (ConfigError naming the setting);
   * storage that cannot be reached does not: /healthz reports it until a re-check passes.
   */
  private async checkStorage(store: ObjectStore): Promise<void> {
    this.storageHealth = new StorageHealth({ store, storage: this.config.storage, logger: this.logger.child({ component: 'storage-health' }) });
    const status = await this.storageHealth.check();
    if (status.misconfigured) throw new ConfigError(`Invalid configuration: ${status.cause}`);
    this.storageHealth.start();
  }

  /**
   * Graceful shutdown (SIGTERM). At once: /healthz answers 503, every new
   * request is refused with 503 and Retry-After, uploads waiting for a slot are
   * refused. Running uploads get SHUTDOWN_GRACE_SECONDS to finish; those still
   * receiving their body then are aborted (write aborted, reservation released,
   * 503 to the client). Only then does the listen socket close (so a load
   * balancer keeps seeing the 503s while we drain), responses still being
   * written get a few seconds, and connections, worker pool and database close.
   */
  async stop(): Promise<void> {
    this.lifecycle = 'draining';
    // Claims nothing more from now on; deliveries in flight finish (bounded by their timeout) while uploads drain.
    const automationsStopped = this.backend?.services.automationDispatcher.stop();
    if (this.backend) {
      const { gate, uploads } = this.backend.services;
      gate.close();
      if (!(await uploads.drain(this.config.shutdownGraceSeconds * 1000))) {
        this.logger.warn({ uploads: uploads.inFlight }, 'shutdown grace period over; aborting the uploads still running');
        uploads.abortAll(serviceUnavailable('The service is shutting down; retry the upload', this.config.upload.retryAfterSeconds));
        // Aborting settles quickly; a commit already under way is let finish.
        if (!(await uploads.drain(ABORT_WAIT_MS))) this.logger.warn({ uploads: uploads.inFlight }, 'uploads did not settle after the abort');
      }
    }
    this.server.stopListening();
    if (!(await this.server.idle(RESPONSE_WAIT_MS))) this.logger.warn('closing connections with responses still being written');
    await this.listener?.stop();
    await this.automationListener?.stop();
    await this.teamLimitsListener?.stop();
    await automationsStopped;
    await this.backend?.services.folderSweeper.stop();
    await this.backend?.services.subscriptionJob.stop();
    await this.backend?.services.crashSweeper.stop();
    await this.backend?.services.expiredRows.stop();
    await this.storageHealth?.stop();
    await this.databaseHealth?.stop();
    this.server.close();
    // The last counts are written while the database is still open.
    await this.servedTraffic?.stop();
    this.servedTraffic = null;
    await this.backend?.close();
    this.backend = null;
  }
}
