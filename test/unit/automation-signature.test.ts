import { createHmac } from 'node:crypto';
import t from 'tap';
import { generateSecret, signatureHeader, verifySignature } from '../../src/domain/automations/signature.ts';

const secret = 'whsec_test-secret';
const body = '{"id":"e1","kind":"media.uploaded"}';
const now = 1_800_000_000;

t.test('the header is t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">', (t) => {
  const header = signatureHeader(secret, now, body);
  const expected = createHmac('sha256', secret).update(`${now}.${body}`).digest('hex');
  t.equal(header, `t=${now},v1=${expected}`);
  t.equal(signatureHeader(secret, now, Buffer.from(body)), header, 'bytes and text sign alike');
  t.end();
});

t.test('verifySignature accepts the right secret, body and a recent timestamp only', (t) => {
  const header = signatureHeader(secret, now, body);
  t.ok(verifySignature(secret, body, header, { now }));
  t.ok(verifySignature(secret, Buffer.from(body), header, { now: now + 300 }), 'within the tolerance');
  t.notOk(verifySignature(secret, body, header, { now: now + 301 }), 'too old');
  t.notOk(verifySignature(secret, body, header, { now: now - 301 }), 'from the future');
  t.ok(verifySignature(secret, body, header, { now: now + 3600, toleranceSeconds: 3600 }), 'tolerance is configurable');
  t.notOk(verifySignature('whsec_other', body, header, { now }), 'another secret');
  t.notOk(verifySignature(secret, body.replace('e1', 'e2'), header, { now }), 'another body');
  t.notOk(verifySignature(secret, body, header.replace(`t=${now}`, `t=${now + 1}`), { now }), 'the timestamp is signed');
  t.notOk(verifySignature(secret, body, undefined, { now }));
  t.notOk(verifySignature(secret, body, '', { now }));
  t.notOk(verifySignature(secret, body, `t=${now}`, { now }), 'no v1');
  t.notOk(verifySignature(secret, body, header.split(',')[1]!, { now }), 'no t');
  t.notOk(verifySignature(secret, body, `t=${now},v1=zz`, { now }), 'malformed digest');
  const rotated = `${header},v1=${'0'.repeat(64)}`;
  t.ok(verifySignature(secret, body, rotated, { now }), 'any v1 entry may match');
  t.end();
});

t.test('generated secrets are 256 random bits with a prefix', (t) => {
  const secrets = new Set(Array.from({ length: 50 }, () => generateSecret()));
  t.equal(secrets.size, 50);
  for (const value of secrets) t.match(value, /^whsec_[A-Za-z0-9_-]{43}$/);
  t.end();
});
