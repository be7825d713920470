import t from 'tap';
import { SIGNED_LINK_TTL_SECONDS, SignedLinks } from '../../src/domain/media/signed-links.ts';
import { contentDisposition, etagMatches, isInlineType, parseRange } from '../../src/http/routes/media/file-serving-routes.ts';

const PATH = 'media/team/7d2f0d55-2b8e-4a42-9d44-4d0a3b1c2e3f/0b7d2a5e-1c2f-4f3a-8e6d-5a4b3c2d1e0f.png';
const START = Date.UTC(2026, 0, 1, 12, 0, 0);

function parse(query: string): { expires: string; signature: string } {
  const params = new URLSearchParams(query.slice(1));
  return { expires: params.get('expires')!, signature: params.get('signature')! };
}

t.test('a signed link verifies for one hour by a movable clock, then fails', (t) => {
  let now = START;
  const links = new SignedLinks({ secret: 'operator-secret', now: () => now });
  const query = links.sign(PATH);
  t.match(query, /^\?expires=\d+&signature=[A-Za-z0-9_-]{43}$/);
  const { expires, signature } = parse(query);
  t.equal(Number(expires), START / 1000 + SIGNED_LINK_TTL_SECONDS);
  t.match(links.verify(PATH, expires, signature), { valid: true, secondsLeft: 3600 });
  now += 59 * 60 * 1000;
  t.match(links.verify(PATH, expires, signature), { valid: true, secondsLeft: 60 });
  now += 59 * 1000;
  t.match(links.verify(PATH, expires, signature), { valid: true, secondsLeft: 1 });
  now += 1000;
  t.same(links.verify(PATH, expires, signature), { valid: false, reason: 'expired' }, 'at the expiry second');
  now += 24 * 3600 * 1000;
  t.same(links.verify(PATH, expires, signature), { valid: false, reason: 'expired' });
  t.end();
});

t.test('an explicit now overrides the clock', (t) => {
  const links = new SignedLinks({ secret: 'operator-secret', now: () => 0 });
  const { expires, signature } = parse(links.sign(PATH, START));
  t.equal(links.verify(PATH, expires, signature, START).valid, true);
  t.equal(links.verify(PATH, expires, signature, START + 3600_000).valid, false);
  t.end();
});

t.test('changing any part of the link fails', (t) => {
  const links = new SignedLinks({ secret: 'operator-secret', now: () => START });
  const { expires, signature } = parse(links.sign(PATH));
  t.equal(links.verify(`${PATH}x`, expires, signature).valid, false, 'path extended');
  t.equal(links.verify(PATH.replace('.png', '.jpg'), expires, signature).valid, false, 'extension changed');
  t.equal(links.verify(PATH.replace('7d2f', '7d2e'), expires, signature).valid, false, 'team changed');
  t.same(links.verify(PATH, String(Number(expires) - 1), signature), { valid: false, reason: 'mismatch' }, 'expiry moved back');
  t.same(links.verify(PATH, String(Number(expires) + 1), signature), { valid: false, reason: 'mismatch' }, 'expiry moved ahead');
  t.same(links.verify(PATH, `0${expires}`, signature), { valid: false, reason: 'malformed' }, 'expiry with a leading zero');
  for (let index = 0; index < signature.length; index++) {
    const replacement = signature[index] === 'A' ? 'B' : 'A';
    const changed = signature.slice(0, index) + replacement + signature.slice(index + 1);
    const result = links.verify(PATH, expires, changed);
    if (result.valid) t.fail(`signature changed at ${index} still verifies`);
  }
  t.same(links.verify(PATH, expires, signature.slice(1)), { valid: false, reason: 'malformed' }, 'short signature');
  t.same(links.verify(PATH, expires, `${signature}=`), { valid: false, reason: 'malformed' }, 'padded signature');
  t.same(links.verify(PATH, null, signature), { valid: false, reason: 'malformed' }, 'no expires');
  t.same(links.verify(PATH, expires, undefined), { valid: false, reason: 'malformed' }, 'no signature');
  t.same(links.verify(PATH, '-1', signature), { valid: false, reason: 'malformed' });
  const last = signature[42]!;
  const sameBits = 'AEIMQUYcgkosw048'.includes(last) ? String.fromCharCode(last.charCodeAt(0) + 1) : null;
  if (sameBits) t.equal(links.verify(PATH, expires, signature.slice(0, 42) + sameBits).valid, false, 'another spelling of the last character');
  t.same(links.verify(PATH, '1e9', signature), { valid: false, reason: 'malformed' });
  t.end();
});

t.test('the key depends on the secret; links of another secret fail', (t) => {
  const a = new SignedLinks({ secret: 'secret-a', now: () => START });
  const b = new SignedLinks({ secret: 'secret-b', now: () => START });
  const { expires, signature } = parse(a.sign(PATH));
  t.equal(b.verify(PATH, expires, signature).valid, false);
  t.equal(new SignedLinks({ secret: 'secret-a', now: () => START }).verify(PATH, expires, signature).valid, true, 'same secret, another instance');
  t.not(parse(a.sign(PATH)).signature, parse(b.sign(PATH)).signature);
  t.throws(() => new SignedLinks({ secret: '' }));
  t.end();
});

t.test('an expiry further ahead than the TTL is refused even when correctly signed', (t) => {
  const longLived = new SignedLinks({ secret: 's', now: () => START, ttlSeconds: 7200 });
  const normal = new SignedLinks({ secret: 's', now: () => START });
  const { expires, signature } = parse(longLived.sign(PATH));
  t.equal(longLived.verify(PATH, expires, signature).valid, true);
  t.same(normal.verify(PATH, expires, signature), { valid: false, reason: 'expired' });
  t.end();
});

t.test('Range header parsing', (t) => {
  const size = 1000;
  t.same(parseRange(undefined, size), { kind: 'none' });
  t.same(parseRange('bytes=0-0', size), { kind: 'range', start: 0, end: 0 });
  t.same(parseRange('bytes=10-19', size), { kind: 'range', start: 10, end: 19 });
  t.same(parseRange('bytes=990-', size), { kind: 'range', start: 990, end: 999 });
  t.same(parseRange('bytes=-10', size), { kind: 'range', start: 990, end: 999 });
  t.same(parseRange('bytes=-5000', size), { kind: 'range', start: 0, end: 999 }, 'suffix longer than the file');
  t.same(parseRange('bytes=900-5000', size), { kind: 'range', start: 900, end: 999 }, 'end clamped');
  t.same(parseRange('bytes=1000-', size), { kind: 'unsatisfiable' });
  t.same(parseRange('bytes=-0', size), { kind: 'unsatisfiable' });
  t.same(parseRange('bytes=0-1,5-6', size), { kind: 'unsatisfiable' }, 'several ranges');
  t.same(parseRange('bytes=0-', 0), { kind: 'unsatisfiable' }, 'empty file');
  t.same(parseRange('bytes=5-1', size), { kind: 'none' }, 'invalid: ignored');
  t.same(parseRange('items=0-1', size), { kind: 'none' }, 'other unit: ignored');
  t.same(parseRange('bytes=a-b', size), { kind: 'none' });
  t.end();
});

t.test('If-None-Match, inline types and Content-Disposition', (t) => {
  t.ok(etagMatches('"abc"', '"abc"'));
  t.ok(etagMatches('W/"abc"', '"abc"'));
  t.ok(etagMatches('"x", "abc"', '"abc"'));
  t.ok(etagMatches('*', '"abc"'));
  t.notOk(etagMatches('"abd"', '"abc"'));
  t.notOk(etagMatches(undefined, '"abc"'));
  for (const type of ['image/png', 'video/mp4', 'audio/ogg', 'application/pdf', 'text/plain', 'text/plain; charset=utf-8']) t.ok(isInlineType(type), type);
  for (const type of ['text/html', 'image/svg+xml', 'application/javascript', 'application/octet-stream', 'application/xml', 'text/css']) t.notOk(isInlineType(type), type);
  t.equal(contentDisposition('image/png', 'shot 1.png'), `inline; filename="shot 1.png"; filename*=UTF-8''shot%201.png`);
  t.equal(contentDisposition('text/html', 'a"b\r\n.html'), `attachment; filename="ab.html"; filename*=UTF-8''ab.html`);
  t.equal(contentDisposition('application/zip', 'bérénice.zip'), `attachment; filename="b_r_nice.zip"; filename*=UTF-8''b%C3%A9r%C3%A9nice.zip`);
  t.end();
});
