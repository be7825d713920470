import t from 'tap';
import { DEFAULT_PASSWORD_HASH_COST, PasswordHasher } from '../../src/auth/password-hash.ts';

// The hasher at the service's default cost (the integration tests run at a low PASSWORD_HASH_COST to keep the suite fast).

t.test('the default: scrypt N=2^17, r=8, p=1, named in the stored form; the right password verifies, a wrong one does not', async (t) => {
  const hasher = new PasswordHasher();
  t.equal(hasher.cost, DEFAULT_PASSWORD_HASH_COST);
  t.equal(DEFAULT_PASSWORD_HASH_COST, 17);
  const stored = await hasher.hash('correct horse battery');
  t.match(stored, /^scrypt\$17\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
  t.not(stored, await hasher.hash('correct horse battery'), 'a salt of its own per hash');
  t.equal(await hasher.verify('correct horse battery', stored), true);
  t.equal(await hasher.verify('correct horse batterz', stored), false);
  t.equal(await hasher.verify('ｃｏｒｒｅｃｔ horse battery', stored), true, 'NFKC: the full-width form of the same password');
});

t.test('a hash verifies with the parameters it names: raising or lowering the cost keeps old passwords working', async (t) => {
  const cheap = new PasswordHasher({ cost: 12 });
  const stored = await cheap.hash('pw-made-at-12');
  t.match(stored, /^scrypt\$12\$8\$1\$/);
  t.equal(await new PasswordHasher().verify('pw-made-at-12', stored), true);
  t.equal(await cheap.verify('pw-made-at-12', await new PasswordHasher({ cost: 14 }).hash('pw-made-at-12')), true);
});

t.test('stored values that are not our hashes never verify', async (t) => {
  const hasher = new PasswordHasher({ cost: 10 });
  const good = await hasher.hash('pw');
  const parts = good.split('$');
  for (const stored of ['', 'plain', `bcrypt$${parts.slice(1).join('$')}`, good.replace('$10$', '$9$'), good.replace('$10$', '$21$'), good.replace('$10$', '$x$'), `${good}$extra`]) {
    t.equal(await hasher.verify('pw', stored), false, JSON.stringify(stored.slice(0, 20)));
  }
});

t.test('a cost outside 10-18 is refused', (t) => {
  for (const cost of [9, 19, 12.5]) t.throws(() => new PasswordHasher({ cost }), RangeError, String(cost));
  t.end();
});

t.test('the decoy is made once and costs a real check', async (t) => {
  const hasher = new PasswordHasher({ cost: 10 });
  const decoy = await hasher.decoyHash();
  t.equal(await hasher.decoyHash(), decoy);
  t.match(decoy, /^scrypt\$10\$/);
  t.equal(await hasher.verify('anything', decoy), false);
});
