import type { components } from './generated/openapi.ts';

/** The service's error body (the OpenAPI `Error` schema). */
export type ErrorBody = components['schemas']['Error'];

/** An error answer of the service, carrying its body: name, message, status, messageKey, value. */
export class MediaApiError extends Error {
  readonly status: number;
  readonly messageKey: string;
  readonly value: string | number | undefined;
  readonly body: ErrorBody;
  /** The answer's X-Request-Id, to find the request in the service's logs. */
  readonly requestId: string | undefined;
  /** Seconds from the answer's Retry-After (429, 503), when it had one. */
  readonly retryAfter: number | undefined;

  constructor(body: ErrorBody, requestId?: string, retryAfter?: number) {
    super(body.message);
    this.name = body.name;
    this.status = body.status;
    this.messageKey = body.messageKey;
    this.value = body.value;
    this.body = body;
    this.requestId = requestId;
    this.retryAfter = retryAfter;
  }
}

/** The request never got an answer: refused, reset or timed out connection. */
export class MediaConnectionError extends Error {
  readonly code: string | undefined;
  constructor(message: string, options: { cause?: unknown; code?: string }) {
    super(message, { cause: options.cause });
    this.name = 'MediaConnectionError';
    this.code = options.code;
  }
}

/** The error body of an answer, or one made up for an answer that has none (e.g. a proxy's HTML page). */
export function errorBodyOf(status: number, text: string): ErrorBody {
  try {
    const parsed = JSON.parse(text) as Partial<ErrorBody>;
    if (typeof parsed.messageKey === 'string' && typeof parsed.message === 'string') {
      return { name: parsed.name ?? 'Error', message: parsed.message, status: parsed.status ?? status, messageKey: parsed.messageKey, ...(parsed.value !== undefined && { value: parsed.value }) };
    }
  } catch {
    // not JSON
  }
  return { name: 'UnexpectedResponseError', message: `HTTP ${status}: ${text.slice(0, 200)}`, status, messageKey: 'error.unexpectedResponse' };
}
