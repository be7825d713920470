import { createHash } from 'node:crypto';
import t from 'tap';
import { apiKeyMatches, apiKeyPrefix, generateApiKey, hashApiKey } from '../../src/auth/api-key-secret.ts';

const KEY_FORMAT = /^tws_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/;

/** Every string that differs from `text` in exactly one character (a few replacement characters per position). */
function oneCharChanges(text: string, alphabet: string): string[] {
  const variants: string[] = [];
  for (let index = 0; index < text.length; index++) {
    for (const replacement of alphabet) {
      if (replacement === text[index]) continue;
      variants.push(text.slice(0, index) + replacement + text.slice(index + 1));
    }
  }
  return variants;
}

t.test('generated keys read tws_<16 hex>_<43 base64url>', (t) => {
  const seen = new Set<string>();
  for (let index = 0; index < 50; index++) {
    const generated = generateApiKey();
    t.match(generated.key, KEY_FORMAT);
    t.equal(generated.key.length, 4 + 16 + 1 + 43);
    t.equal(generated.key.slice(4, 20), generated.prefix, 'the prefix is part of the key');
    t.match(generated.prefix, /^[0-9a-f]{16}$/);
    t.equal(generated.secretHash, hashApiKey(generated.key));
    seen.add(generated.key);
  }
  t.equal(seen.size, 50, 'keys are random');
  t.end();
});

t.test('apiKeyPrefix extracts the prefix of a well-formed key', (t) => {
  const generated = generateApiKey();
  t.equal(apiKeyPrefix(generated.key), generated.prefix);
  const fixed = `tws_0123456789abcdef_${'A'.repeat(21)}-_${'z'.repeat(20)}`;
  t.equal(apiKeyPrefix(fixed), '0123456789abcdef');
  t.end();
});

t.test('malformed keys give a null prefix', (t) => {
  const { key } = generateApiKey();
  const secret = key.slice(21);
  const malformed = [
    '',
    'tws_',
    key.slice(0, -1), // secret one character short
    key + 'A', // secret one character long
    `TWS_${key.slice(4)}`, // wrong scheme case
    `twx_${key.slice(4)}`,
    `tws_0123456789ABCDEF_${secret}`, // upper-case hex prefix
    `tws_0123456789abcde_${secret}`, // prefix 15 characters
    `tws_0123456789abcdef0_${secret}`, // prefix 17 characters
    `tws_0123456789abcdeg_${secret}`, // non-hex prefix
    `tws_0123456789abcdef-${secret}`, // wrong separator
    `tws_0123456789abcdef_${secret.slice(0, -1)}=`, // padding character
    `tws_0123456789abcdef_${secret.slice(0, -1)}+`, // base64, not base64url
    ` ${key}`,
    `${key} `,
    `${key}\n`,
    `Bearer ${key}`,
  ];
  for (const candidate of malformed) t.equal(apiKeyPrefix(candidate), null, JSON.stringify(candidate));
  t.end();
});

t.test('hashApiKey is the SHA-256 of the whole key in lower-case hex', (t) => {
  const { key } = generateApiKey();
  const hash = hashApiKey(key);
  t.match(hash, /^[0-9a-f]{64}$/);
  t.equal(hash, createHash('sha256').update(key, 'utf8').digest('hex'));
  t.equal(hashApiKey('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', 'known SHA-256 test vector');
  t.equal(hashApiKey(key), hash, 'deterministic');
  t.end();
});

t.test('apiKeyMatches is true for the key and its hash', (t) => {
  const { key, secretHash } = generateApiKey();
  t.equal(apiKeyMatches(key, secretHash), true);
  t.end();
});

t.test('apiKeyMatches is false for any one-character change of the key', (t) => {
  const { key, secretHash } = generateApiKey();
  const variants = oneCharChanges(key, 'a0Z_-');
  t.ok(variants.length > key.length * 3);
  const matching = variants.filter((variant) => apiKeyMatches(variant, secretHash));
  t.same(matching, [], 'no variant matches');
  t.equal(apiKeyMatches(key.slice(0, -1), secretHash), false, 'one character removed');
  t.equal(apiKeyMatches(key + 'a', secretHash), false, 'one character added');
  t.equal(apiKeyMatches('', secretHash), false, 'empty key');
  t.end();
});

t.test('apiKeyMatches is false for any one-character change of the hash', (t) => {
  const { key, secretHash } = generateApiKey();
  const matching = oneCharChanges(secretHash, '0123456789abcdef').filter((variant) => apiKeyMatches(key, variant));
  t.same(matching, [], 'no hex-digit change matches');
  t.end();
});

t.test('apiKeyMatches is false for a hash of another length', (t) => {
  const { key, secretHash } = generateApiKey();
  t.equal(apiKeyMatches(key, ''), false, 'empty hash');
  t.equal(apiKeyMatches(key, secretHash.slice(0, -2)), false, 'one byte short');
  t.equal(apiKeyMatches(key, secretHash + '00'), false, 'one byte long');
  t.equal(apiKeyMatches(key, secretHash.slice(0, 32)), false, 'half the hash');
  t.equal(apiKeyMatches(key, secretHash.repeat(2)), false, 'twice the hash');
  t.end();
});

t.test(
  'apiKeyMatches is false for a stored hash that is not exactly 64 hex digits',
  (t) => {
    const { key, secretHash } = generateApiKey();
    t.equal(apiKeyMatches(key, secretHash + 'f'), false, '65 hex digits');
    t.equal(apiKeyMatches(key, secretHash + 'zz'), false, 'trailing non-hex characters');
    t.equal(apiKeyMatches(key, secretHash + '\n'), false, 'trailing newline');
    t.end();
  },
);

t.test('a non-hex character inside the hash does not match', (t) => {
  const { key, secretHash } = generateApiKey();
  for (const index of [0, 31, 63]) {
    const changed = secretHash.slice(0, index) + 'g' + secretHash.slice(index + 1);
    t.equal(apiKeyMatches(key, changed), false, `non-hex at ${index}`);
  }
  t.end();
});

t.test('a key matches only its own hash', (t) => {
  const first = generateApiKey();
  const second = generateApiKey();
  t.equal(apiKeyMatches(first.key, second.secretHash), false);
  t.equal(apiKeyMatches(second.key, first.secretHash), false);
  t.end();
});
