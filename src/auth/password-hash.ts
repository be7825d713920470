import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import PQueue from 'p-queue';

/**
 * Passwords are hashed with scrypt (memory-hard, in Node's own crypto, no native addon to build):
 * by default OWASP's parameters N=2^17, r=8, p=1, i.e. 128 MiB and a few hundred ms per hash
 * (`PASSWORD_HASH_COST` sets log2 N). The stored form names its parameters
 * (`scrypt$17$8$1$<salt>$<hash>`, base64url), so the cost can be raised later and old hashes still
 * verify with the parameters they were made with. At most two hashes run at once per process: each
 * holds up to 128 MiB, and a burst of sign-ins must not take the thread pool or the memory from
 * uploads (sign-in attempts are throttled before they get here).
 */
export const DEFAULT_PASSWORD_HASH_COST = 17;
/** The log2 N a hash may name: below 10 is no protection; 18 (256 MiB per hash) is the most a sign-in may hold. */
export const MIN_PASSWORD_HASH_COST = 10;
export const MAX_PASSWORD_HASH_COST = 18;
const BLOCK_SIZE = 8;
const PARALLEL = 1;
const KEY_BYTES = 32;
const SALT_BYTES = 16;
const hashing = new PQueue({ concurrency: 2 });

/** Longer passwords are refused at validation; this only bounds the work of a hostile body. */
export const MAX_PASSWORD_LENGTH = 256;

function derive(password: string, salt: Buffer, logN: number, r: number, p: number): Promise<Buffer> {
  const options: ScryptOptions = { N: 2 ** logN, r, p, maxmem: 256 * 1024 * 1024 };
  return hashing.add(
    (): Promise<Buffer> => new Promise<Buffer>((resolve, reject) => scrypt(password.normalize('NFKC'), salt, KEY_BYTES, options, (error, key) => (error ? reject(error) : resolve(key)))),
  );
}

export class PasswordHasher {
  /** log2 N of the hashes this hasher makes. */
  readonly cost: number;
  private decoy: Promise<string> | null = null;

  constructor(options: { cost?: number } = {}) {
    this.cost = options.cost ?? DEFAULT_PASSWORD_HASH_COST;
    if (!Number.isInteger(this.cost) || this.cost < MIN_PASSWORD_HASH_COST || this.cost > MAX_PASSWORD_HASH_COST) {
      throw new RangeError(`password hash cost ${this.cost} is outside ${MIN_PASSWORD_HASH_COST}-${MAX_PASSWORD_HASH_COST}`);
    }
  }

  async hash(password: string): Promise<string> {
    const salt = randomBytes(SALT_BYTES);
    const key = await derive(password, salt, this.cost, BLOCK_SIZE, PARALLEL);
    return ['scrypt', this.cost, BLOCK_SIZE, PARALLEL, salt.toString('base64url'), key.toString('base64url')].join('$');
  }

  /** Checks with the parameters `stored` names, whatever this hasher's cost. */
  async verify(password: string, stored: string): Promise<boolean> {
    const parts = stored.split('$');
    if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
    const [logN, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
    if (![logN, r, p].every(Number.isInteger) || logN < MIN_PASSWORD_HASH_COST || logN > MAX_PASSWORD_HASH_COST) return false;
    const expected = Buffer.from(parts[5]!, 'base64url');
    const key = await derive(password, Buffer.from(parts[4]!, 'base64url'), logN, r, p);
    return key.length === expected.length && timingSafeEqual(key, expected);
  }

  /** A hash of a random password: verifying against it costs what a real check costs, so an unknown account cannot be told apart by timing. */
  decoyHash(): Promise<string> {
    this.decoy ??= this.hash(randomBytes(16).toString('hex'));
    return this.decoy;
  }
}
