import { ConfigError, loadConfig, type Config } from '../config/config.ts';
import { createLogger, type Logger } from '../logging/logger.ts';

/** The settings, or null after printing why they are invalid (the command then exits 1). */
export function loadCliConfig(): Config | null {
  try {
    return loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    return null;
  }
}

/** Logs on stderr (stdout carries the command's JSON), quieter than the service's: warnings and up unless LOG_LEVEL says more. */
export function cliLogger(config: Config): Logger {
  return createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, 2);
}
