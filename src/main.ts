import { Application } from './app.ts';
import { ConfigError, loadConfig, type Config } from './config/config.ts';
import { createLogger } from './logging/logger.ts';

let config: Config;
try {
  config = loadConfig();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
}

const logger = createLogger(config.logLevel);
const app = new Application(config, logger);

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'shutting down');
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
