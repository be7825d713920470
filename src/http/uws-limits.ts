// uWebSockets.js reads its request header limit from the environment once, when its native module
// loads (`UWS_HTTP_MAX_HEADERS_SIZE`, default 4096 bytes, in HttpParser.h), and answers a header
// block over it with its own `431` and an HTML body, before any of our code runs. So that clients
// get the spec's error body instead, uWS's limit is set well above ours and the HTTP boundary
// (server.ts) enforces MAX_HEADER_BYTES itself. This module must be evaluated before
// 'uWebSockets.js' is imported: server.ts imports it first.
//
// What stays uWS's own: a header block over its limit (64 KiB unless the operator set another),
// more than 98 header fields (UWS_HTTP_MAX_HEADERS_COUNT is fixed at 100 when uWS is compiled, and
// two of its slots hold the request line and the terminator), requests it cannot parse (400) and
// HTTP versions other than 1.0/1.1 (505).

/** The service's limit on a request's header block (request line, header names and values); 431 beyond. */
export const MAX_HEADER_BYTES = 16 * 1024;

/** uWS's own limit, set here unless the environment already sets it. */
export const UWS_HEADER_BLOCK_BYTES = 64 * 1024;

if (process.env.UWS_HTTP_MAX_HEADERS_SIZE === undefined) {
  process.env.UWS_HTTP_MAX_HEADERS_SIZE = String(UWS_HEADER_BLOCK_BYTES);
}
