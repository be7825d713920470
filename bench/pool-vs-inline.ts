/**
 * Content hashing + type sniffing of one upload body: inline on the main thread, or in the piscina
 * worker pool, with the project's own modules (src/uploads/hashing/content-hasher.ts, src/pool/media-pool.ts,
 * src/uploads/sniffing/sniff-content.ts), for 8 KiB, 256 KiB and 32 MiB bodies.
 *
 *   node bench/pool-vs-inline.ts [--quick] [--json] [--threads N]
 *
 * Modes, each fed the body in 512 KiB chunks (the most uWebSockets.js hands over at once):
 *   inline   sniffContent() on the first 4 KiB + InlineContentHasher (what the service does by default)
 *   pooled   pool.sniff() + PooledContentHasher: whole 1 MiB blocks hashed in the pool, the last
 *            partial block inline (what HASH_OFFLOAD_MIN_BYTES turns on)
 *   pool-all pool.sniff() + pool.hashBlocks() of every block, the partial one included (copied, as
 *            the storage writer still holds the chunks)
 * Measured per size and mode: latency of one body alone (median), and bodies/s with 8 bodies in
 * flight, plus the main thread's busy time per body (event loop utilization): what an upload
 * costs the thread that serves every connection. "Winner" is the faster mode at 8 in flight.
 */
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { combineBlockHashes, hashContent, HASH_BLOCK_SIZE, loadXxhash } from '../src/uploads/hashing/content-hash.ts';
import { MAX_SNIFF_BYTES, sniffContent } from '../src/uploads/sniffing/sniff-content.ts';
import { MediaPool } from '../src/pool/media-pool.ts';
import { InlineContentHasher, PooledContentHasher } from '../src/uploads/hashing/content-hasher.ts';
import { pngLikeContent } from './lib/payloads.ts';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const asJson = args.includes('--json');
const threadsArg = args.indexOf('--threads');
const threads = threadsArg >= 0 ? Number(args[threadsArg + 1]) : availableParallelism();

const KiB = 1024;
const MiB = 1024 * KiB;
const CHUNK = 512 * KiB;
const IN_FLIGHT = 8;
const SIZES = [8 * KiB, 256 * KiB, 32 * MiB];
type Mode = 'inline' | 'pooled' | 'pool-all';
const MODES: Mode[] = ['inline', 'pooled', 'pool-all'];

export interface PoolVsInlineRow {
  size: number;
  mode: Mode;
  /** Median microseconds for one body, alone. */
  aloneMedianUs: number;
  /** Bodies per second with IN_FLIGHT bodies at once. */
  bodiesPerSecond: number;
  mbPerSecond: number;
  /** Main-thread busy microseconds per body with IN_FLIGHT at once. */
  mainThreadUsPerBody: number;
}

export interface PoolVsInlineResult {
  threads: number;
  inFlight: number;
  rows: PoolVsInlineRow[];
  winners: { size: number; winner: Mode; byThroughput: string }[];
}

const api = await loadXxhash();
const pool = new MediaPool({ threads });

/** The body as the service receives it: chunks of up to 512 KiB, each its own copy. */
function chunksOf(body: Buffer): Buffer[] {
  const chunks: Buffer[] = [];
  for (let offset = 0; offset < body.length; offset += CHUNK) chunks.push(Buffer.from(body.subarray(offset, offset + CHUNK)));
  return chunks;
}

async function processBody(mode: Mode, chunks: Buffer[]): Promise<string> {
  const head = chunks[0]!.subarray(0, MAX_SNIFF_BYTES);
  if (mode === 'inline') {
    const sniffed = sniffContent(head);
    if (sniffed.blocked) throw new Error('blocked');
    const hasher = new InlineContentHasher(api);
    for (const chunk of chunks) hasher.push(chunk);
    return hasher.digest();
  }
  const sniffing = pool.sniff(head);
  let digest: Promise<string>;
  if (mode === 'pooled') {
    const hasher = new PooledContentHasher(pool, api);
    for (const chunk of chunks) hasher.push(chunk);
    digest = hasher.digest();
  } else {
    const blocks: Buffer[] = [];
    const whole = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    for (let offset = 0; offset < whole.length; offset += HASH_BLOCK_SIZE) blocks.push(whole.subarray(offset, offset + HASH_BLOCK_SIZE));
    digest = pool.hashBlocks(blocks, { transfer: false }).then((hashes) => combineBlockHashes(api, hashes));
  }
  const [sniffed, hash] = await Promise.all([sniffing, digest]);
  if (sniffed.blocked) throw new Error('blocked');
  return hash;
}

async function measure(size: number, mode: Mode, body: Buffer, expected: string): Promise<PoolVsInlineRow> {
  const aloneMs = quick ? 100 : 400;
  const loadMs = quick ? 200 : 700;
  // The chunks of a few bodies, made up front; pooled mode may transfer assembled blocks, never these.
  const bodies = Array.from({ length: IN_FLIGHT }, () => chunksOf(body));
  for (let i = 0; i < (size >= MiB ? 3 : 30); i++) {
    const hash = await processBody(mode, bodies[i % bodies.length]!);
    if (hash !== expected) throw new Error(`${mode} hashed ${size} bytes to ${hash}, expected ${expected}`);
  }
  const alone: number[] = [];
  const aloneEnd = performance.now() + aloneMs;
  while (performance.now() < aloneEnd || alone.length < 5) {
    const start = performance.now();
    await processBody(mode, bodies[alone.length % bodies.length]!);
    alone.push(performance.now() - start);
  }
  alone.sort((a, b) => a - b);

  let done = 0;
  const eluStart = performance.eventLoopUtilization();
  const start = performance.now();
  const end = start + loadMs;
  await Promise.all(
    bodies.map(async (chunks) => {
      while (performance.now() < end) {
        await processBody(mode, chunks);
        done++;
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  const elu = performance.eventLoopUtilization(eluStart);
  return {
    size,
    mode,
    aloneMedianUs: alone[Math.floor(alone.length / 2)]! * 1000,
    bodiesPerSecond: done / seconds,
    mbPerSecond: (done * size) / 1e6 / seconds,
    mainThreadUsPerBody: (elu.active * 1000) / done,
  };
}

function label(size: number): string {
  return size >= MiB ? `${size / MiB} MiB` : `${size / KiB} KiB`;
}

const rows: PoolVsInlineRow[] = [];
try {
  // Let the workers start and compile their WebAssembly before measuring.
  await pool.hashBlocks([Buffer.alloc(1024)], { transfer: false });
  for (const size of SIZES) {
    const body = pngLikeContent(size);
    const expected = hashContent(api, body);
    for (const mode of MODES) rows.push(await measure(size, mode, body, expected));
  }
} finally {
  await pool.close();
}

const winners = SIZES.map((size) => {
  const inline = rows.find((row) => row.size === size && row.mode === 'inline')!;
  const pooled = rows.filter((row) => row.size === size && row.mode !== 'inline').sort((a, b) => b.bodiesPerSecond - a.bodiesPerSecond)[0]!;
  const winner = inline.bodiesPerSecond >= pooled.bodiesPerSecond ? inline : pooled;
  const loser = winner === inline ? pooled : inline;
  return { size, winner: winner.mode, byThroughput: `${(winner.bodiesPerSecond / loser.bodiesPerSecond).toFixed(2)}x ${loser.mode}` };
});
const result: PoolVsInlineResult = { threads, inFlight: IN_FLIGHT, rows, winners };

if (asJson) {
  process.stdout.write(`${JSON.stringify(result)}\n`);
} else {
  console.log(`worker threads: ${threads}; ${IN_FLIGHT} bodies in flight; chunks of ${CHUNK / KiB} KiB`);
  console.log('size      mode      alone (median µs)  bodies/s   MB/s     main thread µs/body');
  for (const row of rows) {
    console.log(
      `${label(row.size).padEnd(9)} ${row.mode.padEnd(9)} ${row.aloneMedianUs.toFixed(1).padStart(17)}  ${row.bodiesPerSecond.toFixed(0).padStart(8)}  ${row.mbPerSecond.toFixed(0).padStart(7)}  ${row.mainThreadUsPerBody.toFixed(1).padStart(10)}`,
    );
  }
  for (const w of winners) console.log(`${label(w.size)}: ${w.winner} wins (${w.byThroughput})`);
}
