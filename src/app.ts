import { join } from 'node:path';
import { AUTH_CHANGES_CHANNEL, parseAuthChange } from './auth/auth-changes.ts';
import { announceGeneratedSecret, resolveAuthSecret } from './bootstrap/auth-secret.ts';
import { Backend } from './composition/backend.ts';
import { BackgroundJobs } from './jobs/background-jobs.ts';
import type { Services } from './composition/services.ts';
import type { Config } from './config/config.ts';
import { ConfigError } from './config/config.ts';
import { unreachableLinksWarning } from './config/public-url.ts';
import { DatabaseHealth } from './db/database-health.ts';
import { isDatabaseUnavailable } from './db/database-errors.ts';
import { NotificationListener } from './db/notification-listener.ts';
import { AUTOMATION_EVENTS_CHANNEL } from './domain/automations/automation-channel.ts';
import { TEAM_LIMITS_CHANNEL } from './domain/teams/team-state-cache.ts';
import { placeStoredObjects } from './domain/storage-locations/storage-placement.ts';
import { storageRefusal } from './domain/storage-locations/storage-refusal.ts';
import { serviceUnavailable } from './errors/errors.ts';
import { accessLogger } from './http/access-log.ts';
import { Cors } from './http/cors.ts';
import { dashboardRoutes } from './http/dashboard/dashboard-routes.ts';
import { MemoryBudget } from './http/memory-budget.ts';
import { openApiRoutes } from './http/openapi/openapi-routes.ts';
import { Router } from './http/router.ts';
import { operatorRoutes } from './http/routes/operator/operator-routes.ts';
import { automationOperatorRoutes } from './http/routes/operator/automation-operator-routes.ts';
import { subscriptionOperatorRoutes } from './http/routes/operator/subscription-operator-routes.ts';
import { userOperatorRoutes } from './http/routes/operator/user-operator-routes.ts';
import { automationRoutes } from './http/routes/automations/automation-routes.ts';
import { healthRoutes, type Lifecycle } from './http/routes/health.ts';
import { fileServingRoutes } from './http/routes/media/file-serving-routes.ts';
import { folderRoutes } from './http/routes/media/folder-routes.ts';
import { libraryRoutes } from './http/routes/media/library-routes.ts';
import { mediaEditRoutes } from './http/routes/media/media-edit-routes.ts';
import { mediaRoutes } from './http/routes/media/media-routes.ts';
import { textPreviewRoutes } from './http/routes/media/text-preview-routes.ts';
import { tusRoutes } from './http/routes/media/tus-routes.ts';
import { uploadRoutes } from './http/routes/media/upload-routes.ts';
import { uploadUrlRoutes } from './http/routes/media/upload-url-routes.ts';
import { metricsRoutes } from './http/routes/metrics-routes.ts';
import { rootRoutes } from './http/routes/root.ts';
import { teamAdminRoutes } from './http/routes/teams/team-admin-routes.ts';
import { teamFileRoutes } from './http/routes/teams/team-file-routes.ts';
import { meetingRoutes } from './http/routes/teams/meeting-routes.ts';
import { workspacePeopleRoutes } from './http/routes/teams/workspace-people-routes.ts';
import { newsLinkPortalRoutes } from './http/routes/teams/news-link-portal-routes.ts';
import type { TxtResolver } from './domain/portal/txt-resolver.ts';
import { accountRoutes } from './http/routes/users/account-routes.ts';
import { authRoutes } from './http/routes/users/auth-routes.ts';
import { launcherRoutes } from './http/routes/users/launcher-routes.ts';
import { oauthRoutes } from './http/routes/users/oauth-routes.ts';
import { userRoutes } from './http/routes/users/user-routes.ts';
import { notificationDeliveryRoutes } from './http/routes/users/notification-delivery-routes.ts';
import { verificationRoutes } from './http/routes/users/verification-routes.ts';
import { HttpServer, type ListenMode } from './http/server.ts';
import type { Logger } from './logging/logger.ts';
import type { ObjectStore } from './storage/object-store.ts';
import { StorageHealth } from './storage/storage-health.ts';

/** After the grace period, how long aborted uploads and the responses still being written may take. */
const ABORT_WAIT_MS = 10_000;
const RESPONSE_WAIT_MS = 5_000;

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
  private backend: Backend<Services> | null = null;
  private listener: NotificationListener | null = null;
  private automationListener: NotificationListener | null = null;
  private storageHealth: StorageHealth | null = null;
  private databaseHealth: DatabaseHealth | null = null;
  private teamLimitsListener: NotificationListener | null = null;
  private jobs: BackgroundJobs | null = null;
  private boundPort = 0;
  private readonly listenMode: ListenMode;
  private readonly txtResolver: TxtResolver | undefined;

  /** `listen.shared`: one of the HTTP_PROCESSES service processes, sharing HOST:PORT with the others (src/start/supervisor.ts). */
  /** `txtResolver`: the portal domains' TXT lookups (tests pass their own; the system's resolvers otherwise). */
  constructor(config: Config, logger: Logger, options: { listen?: ListenMode; txtResolver?: TxtResolver } = {}) {
    this.config = config;
    this.logger = logger;
    this.listenMode = options.listen ?? {};
    this.txtResolver = options.txtResolver;
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
      this.backend = await Backend.open(this.config, this.logger, { claimIdentity: true, authSecret: secret, txtResolver: this.txtResolver });
      const { services } = this.backend;
      this.databaseHealth = new DatabaseHealth({ databaseUrl: this.backend.databaseUrl, logger: this.logger.child({ component: 'database-health' }) });
      await this.databaseHealth.check();
      this.databaseHealth.start();
      await this.checkStorage(services.store);
      await this.checkStoredObjects(services);
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
      const routes = [
        ...operatorRoutes({ ...services, authSecret: secret, maxJsonBodyBytes: this.config.maxJsonBodyBytes }),
        ...mediaRoutes(services),
        ...uploadRoutes(services),
        ...uploadUrlRoutes({ ...services, maxJsonBodyBytes: this.config.maxJsonBodyBytes }),
        ...tusRoutes(services),
        ...folderRoutes(services, this.config),
        ...fileServingRoutes(services, this.config, { servedTraffic: services.servedTraffic }),
        ...libraryRoutes(services, this.config),
        ...textPreviewRoutes(services),
        ...mediaEditRoutes(services, this.config, services.deletionLinks),
        ...metricsRoutes({ metrics: services.metrics, token: this.config.metricsToken }),
        ...automationRoutes(services, this.config),
        ...teamAdminRoutes(services, { maxJsonBodyBytes: this.config.maxJsonBodyBytes, authSecret: secret }),
        ...teamFileRoutes(services, this.config),
        ...meetingRoutes(services, this.config),
        ...workspacePeopleRoutes(services, this.config),
        ...newsLinkPortalRoutes(services, { maxJsonBodyBytes: this.config.maxJsonBodyBytes, authSecret: secret }),
        ...automationOperatorRoutes({
          automations: services.automations, authSecret: secret, authFailures: services.authFailures, maxJsonBodyBytes: this.config.maxJsonBodyBytes,
        }),
        ...subscriptionOperatorRoutes({
          subscriptions: services.subscriptions, authSecret: secret, authFailures: services.authFailures, maxJsonBodyBytes: this.config.maxJsonBodyBytes,
        }),
        ...authRoutes({ ...services, maxJsonBodyBytes: this.config.maxJsonBodyBytes }),
        ...userRoutes({ ...services, maxJsonBodyBytes: this.config.maxJsonBodyBytes }),
        ...notificationDeliveryRoutes(services),
        ...oauthRoutes({ ...services, maxJsonBodyBytes: this.config.maxJsonBodyBytes }),
        ...accountRoutes({ ...services, maxJsonBodyBytes: this.config.maxJsonBodyBytes }),
        ...verificationRoutes({ ...services, maxJsonBodyBytes: this.config.maxJsonBodyBytes }),
        ...launcherRoutes({ ...services, maxJsonBodyBytes: this.config.maxJsonBodyBytes }),
        ...userOperatorRoutes({ ...services, authSecret: secret, maxJsonBodyBytes: this.config.maxJsonBodyBytes }),
        ...openApiRoutes({ publicUrl: this.config.publicUrl }),
        ...dashboardRoutes({ publicUrl: this.config.publicUrl, cdnUrl: this.config.cdnUrl }),
      ];
      for (const route of routes) this.router.add(route);
      this.jobs = new BackgroundJobs(services);
      this.jobs.start();
      services.automationDispatcher.start();
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
   * The configured store must hold every stored object (issue 34): a start on another driver,
   * bucket or prefix is refused with the setting, the count and `storage migrate`, instead of
   * answering 404 for every file. Also where a finished `storage migrate` takes effect.
   */
  private async checkStoredObjects(services: Services): Promise<void> {
    const placement = await placeStoredObjects({
      orm: services.orm, store: services.store, logger: this.logger.child({ component: 'storage-placement' }),
      storageReachable: this.storageHealth?.status.available ?? false,
    });
    const refusal = storageRefusal(placement, this.config.storage);
    if (refusal) throw refusal;
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
    await this.jobs?.stop();
    await this.storageHealth?.stop();
    await this.databaseHealth?.stop();
    this.server.close();
    // Also writes the last served-traffic counts, while the database is still open.
    await this.backend?.close();
    this.backend = null;
  }
}
