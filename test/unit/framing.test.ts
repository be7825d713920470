import t from 'tap';
import { afterAnswer, closedAfterAnswer, DRAIN_LIMIT_BYTES, requestFraming, responseFraming } from '../../src/http/framing.ts';

t.test('requestFraming: one Content-Length, or chunked last, and nothing ambiguous', (t) => {
  t.same(requestFraming([]), { valid: true, contentLength: null, chunked: false }, 'no body');
  t.same(requestFraming([['content-length', '12']]), { valid: true, contentLength: 12, chunked: false });
  t.same(requestFraming([['content-length', '12'], ['content-length', '12']]), { valid: true, contentLength: 12, chunked: false }, 'the same value twice');
  t.same(requestFraming([['transfer-encoding', 'gzip, Chunked']]), { valid: true, contentLength: null, chunked: true });
  for (const fields of [
    [['content-length', '12'], ['content-length', '13']],
    [['content-length', '12, 12']],
    [['content-length', '-1']],
    [['content-length', '1234567890123456']],
    [['content-length', '12'], ['transfer-encoding', 'chunked']],
    [['transfer-encoding', 'identity']],
    [['transfer-encoding', 'chunked, gzip']],
    [['transfer-encoding', 'chunked'], ['transfer-encoding', 'gzip']],
  ] as Array<Array<[string, string]>>) {
    t.equal(requestFraming(fields).valid, false, JSON.stringify(fields));
  }
  t.end();
});

t.test('responseFraming: 204 has no length, 304 and HEAD the representation\'s', (t) => {
  t.same(responseFraming('DELETE', 204, null), { sendsBody: false, contentLength: null });
  t.same(responseFraming('GET', 304, 500), { sendsBody: false, contentLength: 500 });
  t.same(responseFraming('GET', 304, null), { sendsBody: false, contentLength: null });
  t.same(responseFraming('HEAD', 200, 15), { sendsBody: false, contentLength: 15 });
  t.same(responseFraming('GET', 200, 15), { sendsBody: true, contentLength: 15 });
  t.same(responseFraming('POST', 201, null), { sendsBody: true, contentLength: 0 });
  t.end();
});

t.test('afterAnswer: keep-alive when read whole, linger when uWS closes, drain a small known rest, hold otherwise', (t) => {
  t.equal(afterAnswer({ complete: true, declaredLength: 10, bytesReceived: 10 }, true, false), 'keep-alive');
  t.equal(afterAnswer({ complete: true, declaredLength: 10, bytesReceived: 10 }, true, true), 'keep-alive', 'read whole: uWS may close at once');
  t.equal(afterAnswer({ complete: true, declaredLength: 10, bytesReceived: 10 }, false, false), 'close', 'untrusted framing');
  t.equal(afterAnswer({ complete: false, declaredLength: 10, bytesReceived: 0 }, false, true), 'close', 'untrusted framing, whatever the client asked');
  t.equal(afterAnswer({ complete: false, declaredLength: DRAIN_LIMIT_BYTES + 10, bytesReceived: 10 }, true, false), 'drain');
  t.equal(afterAnswer({ complete: false, declaredLength: DRAIN_LIMIT_BYTES + 11, bytesReceived: 10 }, true, false), 'hold');
  t.equal(afterAnswer({ complete: false, declaredLength: null, bytesReceived: 10 }, true, false), 'hold', 'chunked: unknown rest');
  for (const declaredLength of [DRAIN_LIMIT_BYTES, DRAIN_LIMIT_BYTES * 100, null]) {
    t.equal(afterAnswer({ complete: false, declaredLength, bytesReceived: 10 }, true, true), 'linger', `the client asked to close: linger (${declaredLength})`);
  }
  t.end();
});

t.test('closedAfterAnswer: uWS\'s rule, the first Connection field is 5 characters long', (t) => {
  t.equal(closedAfterAnswer([['connection', 'close']]), true);
  t.equal(closedAfterAnswer([['connection', 'Close']]), true);
  t.equal(closedAfterAnswer([['host', 'x'], ['connection', 'close'], ['connection', 'keep-alive']]), true, 'the first field counts');
  t.equal(closedAfterAnswer([['connection', 'keep-alive'], ['connection', 'close']]), false);
  t.equal(closedAfterAnswer([['connection', 'keep-alive, close']]), false);
  t.equal(closedAfterAnswer([]), false);
  t.end();
});
