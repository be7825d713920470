// HTTP/1.1 message framing at the uWS boundary: how a request's body is delimited (and when that is
// too ambiguous to serve), which answers carry a body and which Content-Length they announce, and
// what becomes of a connection whose request body was not read to the end.

/** How a request's body is delimited, from its header fields as sent (duplicates included). */
export type RequestFraming =
  | { valid: true; contentLength: number | null; chunked: boolean }
  | { valid: false; reason: string };

/**
 * RFC 9112 section 6.3: a body is delimited by Transfer-Encoding (chunked last) or by one
 * Content-Length. Anything else is refused with 400 before the request is processed, because a proxy
 * in front of the service may have read the body's end elsewhere (request smuggling): two
 * Content-Length values that differ, Content-Length together with Transfer-Encoding, a
 * Transfer-Encoding whose last coding is not chunked, a Content-Length that is not one number (a list
 * such as `5, 5` included: uWS would not read it as 5).
 * uWebSockets.js answers some of these itself (Content-Length with `chunked`: its own 400), but takes
 * the first of two Content-Length fields and reads a body with `Transfer-Encoding: identity` as empty.
 */
export function requestFraming(fields: ReadonlyArray<readonly [name: string, value: string]>): RequestFraming {
  const lengths: string[] = [];
  const codings: string[] = [];
  for (const [name, value] of fields) {
    if (name === 'content-length') lengths.push(value.trim());
    else if (name === 'transfer-encoding') codings.push(...value.split(',').map((each) => each.trim().toLowerCase()));
  }
  if (codings.length > 0) {
    if (lengths.length > 0) return { valid: false, reason: 'A request must not have both Content-Length and Transfer-Encoding.' };
    if (codings[codings.length - 1] !== 'chunked') return { valid: false, reason: 'The last Transfer-Encoding of a request must be chunked.' };
    return { valid: true, contentLength: null, chunked: true };
  }
  if (lengths.length === 0) return { valid: true, contentLength: null, chunked: false };
  if (!lengths.every((each) => /^\d{1,15}$/.test(each))) return { valid: false, reason: 'The Content-Length header is invalid.' };
  if (new Set(lengths.map(Number)).size > 1) return { valid: false, reason: 'The request has Content-Length headers that differ.' };
  return { valid: true, contentLength: Number(lengths[0]), chunked: false };
}

/**
 * Whether an answer carries a body, and the Content-Length it announces. 204 carries neither
 * (RFC 9110 8.6); 304 and HEAD carry no body but announce the length of the representation, when
 * known, as a GET would have; every other answer announces its body's length.
 */
export function responseFraming(method: string, status: number, bodyLength: number | null): { sendsBody: boolean; contentLength: number | null } {
  if (status === 204 || (status >= 100 && status < 200)) return { sendsBody: false, contentLength: null };
  if (status === 304 || method === 'HEAD') return { sendsBody: false, contentLength: bodyLength };
  return { sendsBody: true, contentLength: bodyLength ?? 0 };
}

/**
 * Whether uWebSockets.js closes the connection itself as soon as the answer to this request ends:
 * its rule (uws-pack 20.0.8, pinned by uws-behaviour.test.ts) is that the first `Connection` field
 * has a value of 5 characters, meant as `close`. It closes at once, with whatever of the body it has
 * not read still unread, which makes the kernel answer with a reset (see `linger` below).
 */
export function closedAfterAnswer(fields: ReadonlyArray<readonly [name: string, value: string]>): boolean {
  return fields.find(([name]) => name === 'connection')?.[1].length === 5;
}

/**
 * A remainder of an unread request body up to this size is read and discarded after an early answer
 * (so that clients that send their whole body before reading still see the answer); a larger or
 * unknown one is not read at all.
 */
export const DRAIN_LIMIT_BYTES = 1024 * 1024;

/**
 * What becomes of the connection after the answer:
 * - `keep-alive`: the request was read whole; the connection serves the next request.
 * - `drain`: answered early, with `Connection: close`; the rest of a body of known, small size is read
 *   and discarded (the client then closes, or uWS's 10 s idle timeout does).
 * - `hold`: answered early, with `Connection: close`; nothing more is read (the socket stays paused, so
 *   the client's writes stall instead of meeting a reset while it reads the answer) until uWS's 10 s
 *   timeout closes the connection.
 * - `linger`: answered early to a request that uWS closes after its answer (closedAfterAnswer): the
 *   answer is sent at once but ended (and the connection closed) only when the rest of the body has
 *   been read and discarded, or after the lingering limits (lingering-close.ts). Closing with the body
 *   unread would reset the connection, and a client still sending would lose the answer.
 * - `close`: framing that cannot be trusted: the answer closes the connection at once.
 */
export type AfterAnswer = 'keep-alive' | 'drain' | 'hold' | 'linger' | 'close';

export function afterAnswer(
  body: { complete: boolean; declaredLength: number | null; bytesReceived: number }, framingTrusted: boolean, closedByUws: boolean,
): AfterAnswer {
  if (!framingTrusted) return 'close';
  if (body.complete) return 'keep-alive';
  if (closedByUws) return 'linger';
  if (body.declaredLength !== null && body.declaredLength - body.bytesReceived <= DRAIN_LIMIT_BYTES) return 'drain';
  return 'hold';
}
