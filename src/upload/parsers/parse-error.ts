/**
 * A request body that cannot be parsed: malformed, truncated, or over a parser limit.
 * The message is written for the client and is safe to return in a 400 response body.
 */
export class ParseError extends Error {
  override readonly name = 'ParseError';

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}
