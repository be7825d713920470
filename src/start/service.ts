import { Application } from '../app.ts';
import { ConfigError, type Config } from '../config/config.ts';
import type { ListenMode } from '../http/server.ts';
import type { Logger } from '../logging/logger.ts';

export interface RunningService {
  app: Application;
  /** Drains the service (Application.stop()) and exits: 0 when it stopped cleanly, 1 when stopping failed. Idempotent. */
  shutdown(reason: string): Promise<void>;
}

/**
 * Runs the service in this process until SIGTERM or SIGINT: `npm start` itself when
 * HTTP_PROCESSES is 1, each forked service process otherwise. Exits 1 when start-up fails.
 */
export async function runService(config: Config, logger: Logger, options: { listen?: ListenMode } = {}): Promise<RunningService> {
  const app = new Application(config, logger, { listen: options.listen });

  let stopping = false;
  async function shutdown(reason: string): Promise<void> {
    if (stopping) return;
    stopping = true;
    logger.info({ signal: reason }, 'shutting down');
    try {
      await app.stop();
      logger.info('stopped');
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  }

  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  try {
    await app.start();
  } catch (error) {
    logger.fatal({ err: error }, 'start-up failed');
    // Settings found wrong only now (the storage refused them) read like those of loadConfig().
    if (error instanceof ConfigError) process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
  return { app, shutdown };
}
