// Telling a database that is down or restarting from a bug: the first is worth a retry (503 with
// Retry-After), the second is a 500. The pool reconnects on its own once the server is back, so
// nothing else needs to happen here.

/** Socket errors of a connection that could not be made or was lost. */
const CONNECTION_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * SQLSTATEs of a server going away or not ready: class 08 (connection exception) except 08P01
 * protocol_violation (a message the server refused, e.g. a parameter holding NUL), 57P01
 * admin_shutdown (a fast shutdown or restart terminates every session), 57P02 crash_shutdown,
 * 57P03 cannot_connect_now (starting up or shutting down), 53300 too_many_connections.
 */
const UNAVAILABLE_SQLSTATES = /^(08(?!P01)[0-9A-Z]{3}|57P0[123]|53300)$/;

/** What `pg` and pg-pool throw, without a code, when a connection ends under a query or cannot be had in time. */
const LOST_CONNECTION_MESSAGES = [
  'Connection terminated',
  'Client has encountered a connection error and is not queryable',
  'timeout exceeded when trying to connect',
  'Client was closed and is not queryable',
];

/**
 * True when `error` (as thrown by `pg`, or wrapped by MikroORM, which keeps the driver's `code`)
 * says the database could not be reached or dropped the connection, rather than refusing a query.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  // Only the error itself: our own wrappers (StorageError, ServiceError) keep a backend's error as
  // their cause and have already decided what it means.
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (CONNECTION_ERROR_CODES.has(code) || UNAVAILABLE_SQLSTATES.test(code))) return true;
  return LOST_CONNECTION_MESSAGES.some((message) => error.message.startsWith(message));
}
