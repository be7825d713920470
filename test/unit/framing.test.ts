import t from 'tap';
import { afterAnswer, DRAIN_LIMIT_BYTES, requestFraming, responseFraming } from '../../src/http/framing.ts';

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

t.test('afterAnswer: keep-alive when read whole, drain a small known rest, hold otherwise', (t) => {
  t.equal(afterAnswer({ complete: true, declaredLength: 10, bytesReceived: 10 }, true), 'keep-alive');
  t.equal(afterAnswer({ complete: true, declaredLength: 10, bytesReceived: 10 }, false), 'hold', 'untrusted framing');
  t.equal(afterAnswer({ complete: false, declaredLength: DRAIN_LIMIT_BYTES + 10, bytesReceived: 10 }, true), 'drain');
  t.equal(afterAnswer({ complete: false, declaredLength: DRAIN_LIMIT_BYTES + 11, bytesReceived: 10 }, true), 'hold');
  t.equal(afterAnswer({ complete: false, declaredLength: null, bytesReceived: 10 }, true), 'hold', 'chunked: unknown rest');
  t.end();
});
