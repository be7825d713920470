import { ConfigError, loadConfig, type Config } from './config/config.ts';
import { createLogger } from './logging/logger.ts';
import { runService } from './start/service.ts';
import { runSupervisor } from './start/supervisor.ts';

let config: Config;
try {
  config = loadConfig();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
}

const logger = createLogger(config.logLevel);
// HTTP_PROCESSES > 1: this process prepares and supervises that many service processes sharing the port.
if (config.httpProcesses > 1) await runSupervisor(config, logger.child({ pid: process.pid }));
else await runService(config, logger);
