import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { announceGeneratedSecret, resolveAuthSecret } from '../bootstrap/auth-secret.ts';
import type { Config } from '../config/config.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../db/embedded-postgres.ts';
import { serviceUnavailable } from '../errors/errors.ts';
import { healthRoutes } from '../http/routes/health.ts';
import { Router } from '../http/router.ts';
import { HttpServer } from '../http/server.ts';
import type { Logger } from '../logging/logger.ts';
import type { MetricsSnapshot } from '../observability/metrics.ts';
import { isMessage, type ServiceProcessMessage, type SupervisorMessage } from './process-messages.ts';

const SERVICE_PROCESS = fileURLToPath(new URL('./service-process.ts', import.meta.url));
const MIGRATE_PROCESS = fileURLToPath(new URL('./migrate-process.ts', import.meta.url));

const RESTART_DELAY_MIN_MS = 1_000;
const RESTART_DELAY_MAX_MS = 30_000;
/** A process that served this long before it died is restarted after the shortest delay again. */
const STABLE_AFTER_MS = 60_000;
/** On top of SHUTDOWN_GRACE_SECONDS, what a draining process may take (aborts, last responses, closing) before it is killed. */
const STOP_MARGIN_MS = 30_000;
/** How long a scrape's gathering waits for each other process's metrics. */
const METRICS_COLLECT_TIMEOUT_MS = 2_000;

export interface ProcessShares {
  databasePoolSize: number;
  workerThreads: number;
}

/** Each service process's part of DATABASE_POOL_SIZE and WORKER_THREADS, which count for the whole service. */
export function processShares(config: Pick<Config, 'httpProcesses' | 'databasePoolSize' | 'workerThreads'>): ProcessShares {
  return {
    // At least 2: one long transaction (an upload's commit) must not hold up every other request of its process.
    databasePoolSize: Math.max(2, Math.ceil(config.databasePoolSize / config.httpProcesses)),
    workerThreads: Math.max(1, Math.ceil(config.workerThreads / config.httpProcesses)),
  };
}

interface Slot {
  index: number;
  child: ChildProcess | null;
  readyAt: number | null;
  restartDelayMs: number;
  restartTimer: NodeJS.Timeout | null;
  /** metrics-collect requests this process has not answered yet. */
  collecting: Map<number, (snapshot: MetricsSnapshot | null) => void>;
}

type Phase = 'starting' | 'running' | 'stopping';

/**
 * HTTP_PROCESSES > 1: `npm start` becomes this supervisor. It does the one-time work (port, operator
 * secret, embedded PostgreSQL, migrations in a short-lived process), then forks that many service processes
 * (src/start/service-process.ts), each a whole Application with its own database pool, all listening
 * on HOST:PORT with SO_REUSEPORT so that the kernel spreads new connections over them. It restarts
 * a process that dies, gathers /metrics for the process a scrape reached, and on SIGTERM drains them
 * all, stopping the embedded PostgreSQL last.
 */
export class Supervisor {
  private readonly config: Config;
  private readonly logger: Logger;
  private readonly slots: Slot[];
  /** Holds the port from the first moment and answers 503 (healthz too) until every process is ready. */
  private readonly startingServer: HttpServer;
  private phase: Phase = 'starting';
  private port = 0;
  private embedded: EmbeddedDatabase | null = null;
  private childEnv: NodeJS.ProcessEnv = {};
  private preparing: Promise<void> | null = null;
  private allReady: { promise: Promise<void>; resolve(): void; reject(error: Error): void };
  private onAllExited: (() => void) | null = null;
  private nextCollect = 0;
  private exitCode = 0;

  constructor(config: Config, logger: Logger) {
    this.config = config;
    this.logger = logger;
    this.slots = Array.from({ length: config.httpProcesses }, (_, index) => ({
      index, child: null, readyAt: null, restartDelayMs: RESTART_DELAY_MIN_MS, restartTimer: null, collecting: new Map(),
    }));
    const router = new Router();
    for (const route of healthRoutes(() => 'starting')) router.add(route);
    this.startingServer = new HttpServer({
      router,
      logger,
      admit: (request) => {
        if (request.path !== '/healthz') throw serviceUnavailable('The service is starting');
      },
    });
    let resolve!: () => void;
    let reject!: (error: Error) => void;
    const promise = new Promise<void>((onResolve, onReject) => {
      resolve = onResolve;
      reject = onReject;
    });
    this.allReady = { promise, resolve, reject };
  }

  /** Resolves once every service process is ready; rejects when one exits before that (start-up failed). */
  async start(): Promise<void> {
    this.preparing = this.prepare();
    await this.preparing;
    if (this.phase === 'stopping') return;
    for (const slot of this.slots) this.spawn(slot);
    await this.allReady.promise;
    if (this.phase !== 'starting') return;
    this.phase = 'running';
    this.startingServer.close();
    this.logger.info({ port: this.port, processes: this.slots.length, pids: this.slots.map((slot) => slot.child?.pid) }, 'ready');
  }

  private async prepare(): Promise<void> {
    const { config } = this;
    // Exclusive: fails at once when anything listens on the port, another `npm start` included.
    this.port = await this.startingServer.listen(config.host, config.port);
    this.logger.info({ host: config.host, port: this.port, processes: this.slots.length }, 'listening; starting up');
    if (!config.redisUrl) {
      this.logger.warn(
        { processes: this.slots.length },
        'without REDIS_URL each service process counts rate limits on its own: a client may get up to HTTP_PROCESSES times RATE_LIMIT_POINTS',
      );
    }
    const { secret, generated } = await resolveAuthSecret(config.authSecret, config.dataDir);
    if (generated) announceGeneratedSecret(secret, config.dataDir);
    this.embedded = config.databaseUrl
      ? null
      : await startEmbeddedPostgres({ dataDir: config.dataDir, databaseName: 'media', log: (line) => this.logger.debug({ postgres: line }) });
    const databaseUrl = config.databaseUrl ?? this.embedded!.url;
    const shares = processShares(config);
    this.childEnv = {
      ...process.env,
      PORT: String(this.port),
      // The processes use the embedded server this supervisor owns (and stops), never one of their own.
      DATABASE_URL: databaseUrl,
      DATABASE_POOL_SIZE: String(shares.databasePoolSize),
      WORKER_THREADS: String(shares.workerThreads),
    };
    await this.migrate();
    this.logger.info({ ...shares, processes: this.slots.length }, 'starting the service processes');
    // From here the port is shared (SO_REUSEPORT), or the processes could not join; the switch is one synchronous step.
    this.startingServer.stopListening();
    await this.startingServer.listen(config.host, this.port, { shared: true });
  }

  /** Migrations and seed data, once, in a process of their own (src/start/migrate-process.ts). */
  private async migrate(): Promise<void> {
    const child = fork(MIGRATE_PROCESS, [], { env: this.childEnv, stdio: 'inherit' });
    const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
    if (code !== 0) throw new Error(`migrating the database failed (code ${code}, signal ${signal}); its log is above`);
  }

  private spawn(slot: Slot): void {
    const child = fork(SERVICE_PROCESS, [], { env: this.childEnv, stdio: 'inherit' });
    slot.child = child;
    slot.readyAt = null;
    child.on('message', (message) => this.onMessage(slot, message));
    child.on('exit', (code, signal) => this.onExit(slot, child, code, signal));
    child.on('error', (error) => this.logger.error({ err: error, process: slot.index, childPid: child.pid }, 'service process error'));
  }

  private onMessage(slot: Slot, message: unknown): void {
    if (!isMessage<ServiceProcessMessage>(message)) return;
    if (message.type === 'ready') {
      slot.readyAt = Date.now();
      this.logger.info({ process: slot.index, childPid: slot.child?.pid }, 'service process ready');
      if (this.phase === 'starting' && this.slots.every((each) => each.readyAt !== null)) this.allReady.resolve();
    } else if (message.type === 'metrics-request') {
      void this.gatherMetrics(slot, message.id);
    } else if (message.type === 'metrics-snapshot') {
      slot.collecting.get(message.id)?.(message.snapshot);
    }
  }

  private onExit(slot: Slot, child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (slot.child !== child) return;
    const readyAt = slot.readyAt;
    slot.child = null;
    slot.readyAt = null;
    for (const finish of slot.collecting.values()) finish(null);
    const details = { process: slot.index, childPid: child.pid, code, signal };
    if (this.phase === 'stopping') {
      // Killed by our SIGTERM: it was still loading, before its handler existed (and before it listened).
      const clean = code === 0 || signal === 'SIGTERM';
      if (!clean) this.exitCode = 1;
      this.logger[clean ? 'info' : 'error'](details, 'service process stopped');
      if (this.slots.every((each) => each.child === null)) this.onAllExited?.();
      return;
    }
    if (this.phase === 'starting') {
      this.allReady.reject(new Error(`service process ${slot.index} (pid ${child.pid}) exited during start-up (code ${code}, signal ${signal})`));
      return;
    }
    if (readyAt !== null && Date.now() - readyAt >= STABLE_AFTER_MS) slot.restartDelayMs = RESTART_DELAY_MIN_MS;
    const delay = slot.restartDelayMs;
    slot.restartDelayMs = Math.min(delay * 2, RESTART_DELAY_MAX_MS);
    this.logger.error({ ...details, restartInMs: delay }, 'service process exited; restarting it');
    slot.restartTimer = setTimeout(() => {
      slot.restartTimer = null;
      if (this.phase === 'running') this.spawn(slot);
    }, delay);
  }

  /** A scrape reached `requester`: the snapshots of every other ready process, those that answer in time. */
  private async gatherMetrics(requester: Slot, id: number): Promise<void> {
    const others = this.slots.filter((slot) => slot !== requester && slot.readyAt !== null);
    const snapshots = await Promise.all(others.map((slot) => this.collect(slot)));
    send(requester.child, { type: 'metrics-peers', id, snapshots: snapshots.filter((snapshot) => snapshot !== null) });
  }

  private collect(slot: Slot): Promise<MetricsSnapshot | null> {
    return new Promise((resolve) => {
      const id = ++this.nextCollect;
      const finish = (snapshot: MetricsSnapshot | null): void => {
        clearTimeout(timer);
        slot.collecting.delete(id);
        resolve(snapshot);
      };
      const timer = setTimeout(() => finish(null), METRICS_COLLECT_TIMEOUT_MS);
      slot.collecting.set(id, finish);
      send(slot.child, { type: 'metrics-collect', id });
    });
  }

  /**
   * SIGTERM to every service process (each drains: healthz 503, uploads finish within
   * SHUTDOWN_GRACE_SECONDS or are aborted), then the embedded PostgreSQL stops. Resolves with the
   * exit code: 0 when every process stopped cleanly (and `failed` is false: the start did not fail).
   */
  async stop(reason: string, failed = false): Promise<number> {
    this.logger.info({ signal: reason }, 'shutting down');
    if (failed) this.exitCode = 1;
    this.phase = 'stopping';
    this.allReady.resolve(); // a start() still waiting returns
    await this.preparing?.catch(() => undefined);
    for (const slot of this.slots) {
      if (slot.restartTimer) clearTimeout(slot.restartTimer);
      slot.restartTimer = null;
      slot.child?.kill('SIGTERM');
    }
    const running = () => this.slots.flatMap((slot) => (slot.child ? [slot.child] : []));
    if (running().length > 0) {
      const exited = new Promise<void>((resolve) => (this.onAllExited = resolve));
      const deadline = setTimeout(() => {
        for (const child of running()) {
          this.logger.error({ childPid: child.pid }, 'service process did not stop in time; killing it');
          child.kill('SIGKILL');
        }
        this.exitCode = 1;
      }, this.config.shutdownGraceSeconds * 1000 + STOP_MARGIN_MS);
      await exited;
      clearTimeout(deadline);
    }
    this.startingServer.close();
    try {
      await this.embedded?.stop();
    } catch (error) {
      this.logger.error({ err: error }, 'stopping the embedded PostgreSQL failed');
      this.exitCode = 1;
    }
    this.logger.info({ exitCode: this.exitCode }, 'stopped');
    return this.exitCode;
  }
}

function send(child: ChildProcess | null, message: SupervisorMessage): void {
  // A process that is gone answers nothing; its exit is handled on its own.
  if (child?.connected) child.send(message, () => undefined);
}

/** `npm start` with HTTP_PROCESSES > 1: runs the supervisor until SIGTERM or SIGINT, then exits with its code. */
export async function runSupervisor(config: Config, logger: Logger): Promise<void> {
  const supervisor = new Supervisor(config, logger);
  let stopping: Promise<void> | null = null;
  const stop = (reason: string, failed = false): Promise<void> =>
    (stopping ??= supervisor.stop(reason, failed).then((code) => process.exit(code)));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  try {
    await supervisor.start();
  } catch (error) {
    logger.fatal({ err: error }, 'start-up failed');
    await stop('start-up failed', true);
  }
}
