// What the S3 client's errors mean for the store: StorageError codes, and whether a failed
// request can have changed anything.
import { StorageError, type StorageErrorCode } from '../object-store.ts';

const NETWORK_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

export interface SdkErrorShape {
  name?: string;
  code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
}

export function httpStatusOf(error: unknown): number | undefined {
  return (error as SdkErrorShape | null)?.$metadata?.httpStatusCode;
}

/** Errors raised before a request left this machine: it cannot have changed anything. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * The request certainly changed nothing: the server refused it (4xx) or it never reached the
 * server. Anything else (5xx, reset, timeout, cancelled) leaves its outcome unknown.
 */
export function changedNothing(error: unknown): boolean {
  const status = httpStatusOf(error);
  if (status !== undefined) return status >= 400 && status < 500;
  const code = (error as SdkErrorShape | null)?.code;
  return code !== undefined && NOT_SENT_CODES.has(code);
}

export function isNotFound(error: unknown): boolean {
  const name = (error as SdkErrorShape | null)?.name;
  return httpStatusOf(error) === 404 || name === 'NotFound' || name === 'NoSuchKey' || name === 'NoSuchUpload';
}

function codeFor(error: unknown): StorageErrorCode {
  const status = httpStatusOf(error);
  if (status !== undefined) return status >= 500 || status === 429 ? 'unavailable' : 'failed';
  const { name, code } = (error as SdkErrorShape | null) ?? {};
  if (name === 'TimeoutError' || (code !== undefined && NETWORK_ERROR_CODES.has(code))) return 'unavailable';
  return 'failed';
}

export function wrap(error: unknown, operation: string, key: string | null): StorageError {
  if (error instanceof StorageError) return error;
  const { name, message } = (error as SdkErrorShape | null) ?? {};
  const status = httpStatusOf(error);
  const detail = [name, status === undefined ? undefined : `HTTP ${status}`, message].filter(Boolean).join(', ');
  return new StorageError(`S3 ${operation}${key === null ? '' : ` of ${key}`} failed${detail ? `: ${detail}` : ''}`, {
    code: codeFor(error),
    operation,
    key,
    cause: error,
  });
}
