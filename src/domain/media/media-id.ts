import { randomFillSync } from 'node:crypto';
import { v7 } from 'uuid';

/**
 * A new media file's id: a UUIDv7, its first 48 bits the time in milliseconds, the other 74 random.
 *
 * The id keys `media_file`'s primary key, `media_content`'s and (inside the storage key) the storage
 * key's unique index. Random (v4) ids put every insert on a random leaf of each of those indexes:
 * on a table of a fleet's size each upload then dirties pages no other recent upload touched, and
 * after each checkpoint writes them whole to the WAL. Ids in time order insert at the right edge.
 * Measured with `bench/batch-commit.ts --prefill 1000000` (docs/performance.md): PostgreSQL's CPU per
 * 8 KiB log upload 146-171 µs with v4 ids, 104-142 µs with these, and the WAL per upload 12.4 KiB
 * against 7.6 KiB.
 *
 * Passing options makes the library draw the sequence bits at random for every id rather than
 * count up within a millisecond, so that no id tells its neighbours: 74 random bits each, as
 * unguessable as a public link needs (a v4 id has 122). The random bytes come from a pool refilled
 * 256 ids at a time, as Node's randomUUID does: the library's own source asks WebCrypto for 16
 * bytes per id, ~2 µs of every upload's main thread against ~0.3 µs.
 */
export function newMediaId(): string {
  return v7({ rng: nextRandomBytes });
}

const POOL_BYTES = 16 * 256;
const pool = new Uint8Array(POOL_BYTES);
let poolOffset = POOL_BYTES;

function nextRandomBytes(): Uint8Array {
  if (poolOffset === POOL_BYTES) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  poolOffset += 16;
  return pool.subarray(poolOffset - 16, poolOffset);
}
