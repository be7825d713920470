import { pino, type Logger } from 'pino';

export type { Logger };

/** Structured JSON logs, one line per event: on stdout for the service, on stderr for the CLI. */
export function createLogger(level: string, fd: 1 | 2 = 1): Logger {
  return pino(
    { level, base: { service: 'media-upload-service' }, timestamp: pino.stdTimeFunctions.isoTime },
    pino.destination({ fd, sync: fd === 2 }),
  );
}
