import t from 'tap';
import { newMediaId } from '../../src/domain/media/media-id.ts';
import { isUuid } from '../../src/domain/validation.ts';
import { UUID_V7 } from '../helpers/uuid-v7.ts';

const hex = (id: string) => id.replaceAll('-', '');
const millisecondsOf = (id: string) => parseInt(hex(id).slice(0, 12), 16);
/** The 74 bits after the time, less the version and variant: the 12 of rand_a, then the 62 of rand_b. */
const randomBitsOf = (id: string) => {
  const bits = BigInt(`0x${hex(id)}`);
  return ((bits >> 64n) & 0xfffn) << 62n | (bits & ((1n << 62n) - 1n));
};

t.test('media ids are UUIDv7s the API accepts, in the order they were made', async (t) => {
  const before = Date.now();
  const ids = Array.from({ length: 20_000 }, newMediaId);
  const after = Date.now();
  t.ok(ids.every((id) => UUID_V7.test(id) && isUuid(id)), 'every id is a v7 UUID');
  t.equal(new Set(ids).size, ids.length, 'no id twice');
  t.ok(ids.every((id) => millisecondsOf(id) >= before && millisecondsOf(id) <= after), 'the first 48 bits are the time it was made');
  const outOfOrder = ids.filter((id, i) => i > 0 && millisecondsOf(id) < millisecondsOf(ids[i - 1]!));
  t.same(outOfOrder, [], 'a later id never sorts before an earlier millisecond');
});

t.test('ids of the same millisecond do not count up from each other: every one has 74 random bits', async (t) => {
  const ids = Array.from({ length: 20_000 }, newMediaId);
  let sameMillisecond = 0;
  let adjacent = 0;
  for (let i = 1; i < ids.length; i++) {
    if (millisecondsOf(ids[i]!) !== millisecondsOf(ids[i - 1]!)) continue;
    sameMillisecond++;
    // A counter (the library's default within a millisecond) makes the next id's random bits the last one's + 1 << 42.
    const step = randomBitsOf(ids[i]!) - randomBitsOf(ids[i - 1]!);
    if (step > 0n && step < 1n << 43n) adjacent++;
  }
  t.ok(sameMillisecond > 1_000, `many ids share a millisecond (${sameMillisecond})`);
  t.equal(adjacent, 0, 'no id is its predecessor plus one');
});
