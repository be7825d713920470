/**
 * The stored content hash (MediaFile.hash), defined here and nowhere else.
 *
 * Definition:
 *   1. The content is split into fixed blocks of HASH_BLOCK_SIZE = 1 MiB (1,048,576 bytes).
 *      The last block may be shorter; empty content has zero blocks.
 *   2. Each block's hash is xxh64 (seed 0) of the block, taken as 8 bytes big-endian.
 *   3. The content hash is xxh64 (seed 0) of the concatenation of the block hashes, in
 *      content order, written as 16 lowercase hex digits (zero-padded).
 *
 * So the hash of empty content is xxh64 of zero bytes, 'ef46db3751d8e999'. This is NOT the
 * plain xxh64 of the content (that would be a different number for every size above 0);
 * anything that compares with a stored hash must use hashContent() or the same steps.
 *
 * Why blocks: block hashes are independent of each other, so whole blocks can be hashed in
 * worker threads in any order, in parallel, while the upload is still streaming, and only
 * the short list of 8-byte block hashes is combined (in order) at the end.
 *
 * Pure module: no pool, no I/O. Used on the main thread (small bodies, the last partial
 * block, combining) and in workers/media-tasks.ts (whole blocks).
 */
import xxhash from 'xxhash-wasm';

/** Block size of the content hash: 1 MiB. Changing it changes every stored hash. */
export const HASH_BLOCK_SIZE = 1024 * 1024;

/** The xxhash-wasm instance (h64Raw, create64, ...). */
export type XxHashApi = Awaited<ReturnType<typeof xxhash>>;

let loading: Promise<XxHashApi> | null = null;

/** The xxhash-wasm instance of this thread, compiled once (each worker thread has its own). */
export function loadXxhash(): Promise<XxHashApi> {
  if (!loading) {
    loading = xxhash();
    // A failed load is not cached, so a later call can try again.
    loading.catch(() => {
      loading = null;
    });
  }
  return loading;
}

/** xxh64 (seed 0) of one block, as an unsigned 64-bit bigint. */
export function hashBlock(api: XxHashApi, block: Uint8Array): bigint {
  return api.h64Raw(block, 0n);
}

/** The content hash from the block hashes in content order: xxh64 (seed 0) of their 8-byte big-endian concatenation, 16 lowercase hex digits. */
export function combineBlockHashes(api: XxHashApi, blockHashes: bigint[]): string {
  const bytes = new Uint8Array(blockHashes.length * 8);
  const view = new DataView(bytes.buffer);
  blockHashes.forEach((hash, index) => view.setBigUint64(index * 8, hash, false));
  return api.h64Raw(bytes, 0n).toString(16).padStart(16, '0');
}

/** Reference implementation: the content hash of a complete body, inline. */
export function hashContent(api: XxHashApi, content: Uint8Array): string {
  const hashes: bigint[] = [];
  for (let offset = 0; offset < content.length; offset += HASH_BLOCK_SIZE) {
    hashes.push(hashBlock(api, content.subarray(offset, offset + HASH_BLOCK_SIZE)));
  }
  return combineBlockHashes(api, hashes);
}

/**
 * Cuts a stream of chunks of any size into the 1 MiB blocks of the content hash.
 *
 * push() returns the complete blocks that the bytes so far make; flush() returns the final
 * partial block (null when there is none), after which the splitter starts over.
 *
 * Copying: a block that lies wholly inside one chunk is returned as a view of that chunk
 * (subarray, no copy); so a chunk that is exactly 1 MiB arriving on a block boundary is
 * returned as-is, the very same Buffer object. Only blocks that straddle chunks are
 * assembled, by copying, into a freshly allocated 1 MiB buffer of their own (a new one for
 * every block, never reused after it is returned).
 *
 * Consequences for callers: blocks that are views share memory with the caller's chunks, so
 * a chunk must not be modified until its blocks are hashed; and a view block that covers its
 * chunk's whole ArrayBuffer is eligible for transfer by MediaPool.hashBlocks(), which detaches
 * the chunk too (see MediaPool). Assembled blocks own their ArrayBuffer exactly.
 */
export class BlockSplitter {
  /** Block being assembled from pieces of several chunks; null when none is in progress. */
  private partial: Buffer | null = null;
  private filled = 0;

  push(chunk: Buffer): Buffer[] {
    const blocks: Buffer[] = [];
    let offset = 0;
    if (this.partial) {
      const take = Math.min(HASH_BLOCK_SIZE - this.filled, chunk.length);
      chunk.copy(this.partial, this.filled, 0, take);
      this.filled += take;
      offset = take;
      if (this.filled === HASH_BLOCK_SIZE) {
        blocks.push(this.partial);
        this.partial = null;
        this.filled = 0;
      }
    }
    while (chunk.length - offset >= HASH_BLOCK_SIZE) {
      blocks.push(offset === 0 && chunk.length === HASH_BLOCK_SIZE ? chunk : chunk.subarray(offset, offset + HASH_BLOCK_SIZE));
      offset += HASH_BLOCK_SIZE;
    }
    if (offset < chunk.length) {
      // allocUnsafeSlow: never a slice of Node's shared pool, so the block owns its ArrayBuffer.
      // Every byte handed out is written first.
      this.partial ??= Buffer.allocUnsafeSlow(HASH_BLOCK_SIZE);
      chunk.copy(this.partial, this.filled, offset);
      this.filled += chunk.length - offset;
    }
    return blocks;
  }

  /** The final partial block (a view of the assembly buffer, shorter than 1 MiB), or null; resets the splitter. */
  flush(): Buffer | null {
    const last = this.partial && this.filled > 0 ? this.partial.subarray(0, this.filled) : null;
    this.partial = null;
    this.filled = 0;
    return last;
  }
}
