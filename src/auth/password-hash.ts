import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import PQueue from 'p-queue';

/**
 * Passwords are hashed with scrypt (memory-hard, in Node's own crypto, no native addon to build):
 * OWASP's parameters N=2^17, r=8, p=1, i.e. 128 MiB and a few hundred ms per hash. The stored form
 * names its parameters (`scrypt$17$8$1$<salt>$<hash>`, base64url), so they can be raised later and
 * old hashes still verify. At most two hashes run at once per process: each holds 128 MiB, and a
 * burst of sign-ins must not take the thread pool or the memory from uploads (sign-in attempts
 * are throttled before they get here).
 */
const LOG_N = 17;
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

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, LOG_N, BLOCK_SIZE, PARALLEL);
  return ['scrypt', LOG_N, BLOCK_SIZE, PARALLEL, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [logN, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![logN, r, p].every(Number.isInteger) || logN < 10 || logN > 20) return false;
  const expected = Buffer.from(parts[5]!, 'base64url');
  const key = await derive(password, Buffer.from(parts[4]!, 'base64url'), logN, r, p);
  return key.length === expected.length && timingSafeEqual(key, expected);
}

let decoy: Promise<string> | null = null;

/** A hash of a random password: verifying against it costs what a real check costs, so an unknown account cannot be told apart by timing. */
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(16).toString('hex'));
  return decoy;
}
