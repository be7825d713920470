/** The error body of spec section 7. */
export interface ErrorBody {
  name: string;
  message: string;
  status: number;
  messageKey: string;
  value?: number | string;
}

export interface ServiceErrorOptions {
  name: string;
  status: number;
  messageKey: string;
  message: string;
  value?: number | string;
  /** Response headers that belong to this error, such as Retry-After. */
  headers?: Record<string, string>;
  cause?: unknown;
}

/**
 * The one error type that reaches clients. Everything else thrown inside a
 * request is rendered as 500 error.internalServerError without its details.
 */
export class ServiceError extends Error {
  readonly status: number;
  readonly messageKey: string;
  readonly value: number | string | undefined;
  readonly headers: Record<string, string>;

  constructor(options: ServiceErrorOptions) {
    super(options.message, { cause: options.cause });
    this.name = options.name;
    this.status = options.status;
    this.messageKey = options.messageKey;
    this.value = options.value;
    this.headers = options.headers ?? {};
  }

  toBody(): ErrorBody {
    const body: ErrorBody = { name: this.name, message: this.message, status: this.status, messageKey: this.messageKey };
    if (this.value !== undefined) body.value = this.value;
    return body;
  }
}
