import { pino, type Logger } from 'pino';

export type { Logger };

/** The service's log lines are written once this many bytes are waiting, */
const BATCH_BYTES = 3584;
/** or at the latest this long after they were logged. */
const FLUSH_INTERVAL_MS = 100;
/**
 * At most this much per write: PIPE_BUF, so that a write reaches a pipe whole, never interleaved
 * with another writer's (the processes of HTTP_PROCESSES > 1 share one stdout).
 */
const MAX_WRITE_BYTES = 4096;

/**
 * Structured JSON logs, one line per event: on stdout for the service, on stderr for the CLI.
 *
 * The service's lines go out in batches of 3.5-4 KiB, and at the latest 100 ms after they were
 * logged: every write to stdout is a hop to the thread pool and back, which cost more than the
 * rest of an access log line (docs/performance.md, "Thread hops"). pino flushes what is left when
 * the process exits, so only a process killed outright (SIGKILL) loses its last 100 ms of lines.
 * The CLI writes each line at once.
 */
export function createLogger(level: string, fd: 1 | 2 = 1): Logger {
  const options = { level, base: { service: 'media-upload-service' }, timestamp: pino.stdTimeFunctions.isoTime };
  if (fd === 2) return pino(options, pino.destination({ fd, sync: true }));
  const destination = pino.destination({ fd, sync: false, minLength: BATCH_BYTES, maxWrite: MAX_WRITE_BYTES });
  // Bytes logged and not yet written: a flush only when some wait, so an idle service writes nothing.
  let waiting = 0;
  destination.on('write', (bytes: number) => {
    waiting -= bytes;
  });
  setInterval(() => {
    if (waiting > 0) destination.flush();
  }, FLUSH_INTERVAL_MS).unref();
  return pino(
    {
      ...options,
      hooks: {
        streamWrite(line) {
          waiting += Buffer.byteLength(line);
          return line;
        },
      },
    },
    destination,
  );
}
