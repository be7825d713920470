/**
 * Entry of the short-lived process in which the supervisor (HTTP_PROCESSES > 1) migrates the
 * database and seeds the plans once, before the service processes start: the ORM's memory goes
 * away with it instead of staying in the supervisor for its whole life. Exits 0 when done.
 */
import { ConfigError, loadConfig } from '../config/config.ts';
import { openDomainDatabase } from '../composition/database.ts';
import { createLogger } from '../logging/logger.ts';

const config = loadConfig();
const logger = createLogger(config.logLevel).child({ pid: process.pid });
if (!config.databaseUrl) throw new Error('the supervisor passes DATABASE_URL');
try {
  const orm = await openDomainDatabase({ databaseUrl: config.databaseUrl, poolSize: 1, logger });
  await orm.close();
} catch (error) {
  logger.fatal({ err: error }, 'migrating the database failed');
  // A refusal (a database newer than this version) reads like any other start-up refusal.
  if (error instanceof ConfigError) process.stderr.write(`${error.message}\n`);
  process.exit(1);
}
