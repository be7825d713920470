/**
 * Entry of one service process forked by the supervisor (HTTP_PROCESSES > 1, src/start/supervisor.ts).
 * Its configuration is the supervisor's environment plus what the supervisor decided: PORT (resolved),
 * DATABASE_URL (the embedded server it owns), and this process's shares of DATABASE_POOL_SIZE and WORKER_THREADS.
 */
import { loadConfig } from '../config/config.ts';
import { createLogger } from '../logging/logger.ts';
import type { MetricsSnapshot } from '../observability/metrics.ts';
import { isMessage, type ServiceProcessMessage, type SupervisorMessage } from './process-messages.ts';
import { runService } from './service.ts';

/** A scrape waits at most this long for the supervisor to gather the other processes' metrics. */
const PEER_METRICS_TIMEOUT_MS = 3_000;

function send(message: ServiceProcessMessage): void {
  if (process.connected) process.send!(message);
}

const config = loadConfig();
const logger = createLogger(config.logLevel).child({ pid: process.pid });

// Supervisor gone (even SIGKILLed): nothing would stop or replace this process, so it drains and exits;
// while still starting it has not listened yet, so it just exits.
let shutdown: ((reason: string) => Promise<void>) | null = null;
process.on('disconnect', () => {
  if (shutdown) void shutdown('supervisor gone');
  else process.exit(1);
});

const running = await runService(config, logger, { listen: { shared: true } });
const { app } = running;
shutdown = running.shutdown;

const { metrics } = app.services;
let nextRequest = 0;
const waiting = new Map<number, (snapshots: MetricsSnapshot[]) => void>();
metrics.includePeers(() => new Promise((resolve) => {
  const id = ++nextRequest;
  const timer = setTimeout(() => {
    waiting.delete(id);
    resolve([]); // media_metrics_processes then says how many processes the answer covers
  }, PEER_METRICS_TIMEOUT_MS);
  waiting.set(id, (snapshots) => {
    clearTimeout(timer);
    waiting.delete(id);
    resolve(snapshots);
  });
  send({ type: 'metrics-request', id });
}));

process.on('message', (message) => {
  if (!isMessage<SupervisorMessage>(message)) return;
  if (message.type === 'metrics-peers') waiting.get(message.id)?.(message.snapshots);
  else if (message.type === 'metrics-collect') {
    void metrics.snapshot().then(
      (snapshot) => send({ type: 'metrics-snapshot', id: message.id, snapshot }),
      (error: unknown) => logger.error({ err: error }, 'metrics snapshot failed'),
    );
  }
});

send({ type: 'ready' });
