import './start/thread-pool-size.ts'; // first: see the module
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
// HTTP_PROCESSES > 1: this process prepares and supervises that many service processes sharing the port.
// Imported on demand: the supervisor stays small without the service's modules (ORM, storage SDKs).
if (config.httpProcesses > 1) {
  const { runSupervisor } = await import('./start/supervisor.ts');
  await runSupervisor(config, logger.child({ pid: process.pid }));
} else {
  const { runService } = await import('./start/service.ts');
  await runService(config, logger);
}
