import { BlockSplitter, combineBlockHashes, HASH_BLOCK_SIZE, hashBlock, type XxHashApi } from './content-hash.ts';
import type { MediaPool } from '../../pool/media-pool.ts';

/** Feeds an upload's bytes into the content hash of src/uploads/hashing/content-hash.ts. */
export interface ContentHasher {
  push(chunk: Buffer): void;
  /** Starts over (the upload switched to another file part). */
  reset(): void;
  digest(): Promise<string>;
}

/**
 * Hashes each 1 MiB block as its bytes pass, on the main thread, without
 * copying them anywhere but into xxhash's own wasm memory. xxh64 runs at
 * 6-16 GB/s here, so a 512 KiB chunk costs well under 0.1 ms: less than
 * copying it for a worker would (docs/performance.md, "Defaults, and why").
 */
export class InlineContentHasher implements ContentHasher {
  private readonly api: XxHashApi;
  private state;
  private inBlock = 0;
  private hashes: bigint[] = [];

  constructor(api: XxHashApi) {
    this.api = api;
    this.state = api.create64(0n);
  }

  push(chunk: Buffer): void {
    let offset = 0;
    while (offset < chunk.length) {
      const take = Math.min(HASH_BLOCK_SIZE - this.inBlock, chunk.length - offset);
      this.state.update(offset === 0 && take === chunk.length ? chunk : chunk.subarray(offset, offset + take));
      this.inBlock += take;
      offset += take;
      if (this.inBlock === HASH_BLOCK_SIZE) {
        this.hashes.push(this.state.digest());
        this.state = this.api.create64(0n);
        this.inBlock = 0;
      }
    }
  }

  reset(): void {
    this.state = this.api.create64(0n);
    this.inBlock = 0;
    this.hashes = [];
  }

  async digest(): Promise<string> {
    if (this.inBlock > 0) this.hashes.push(this.state.digest());
    return combineBlockHashes(this.api, this.hashes);
  }
}

/**
 * Hashes whole 1 MiB blocks in the worker pool while the upload goes on and
 * the last partial block inline. Chosen for files of at least
 * HASH_OFFLOAD_MIN_BYTES; the benchmark compares it with the inline hasher.
 */
export class PooledContentHasher implements ContentHasher {
  private readonly pool: MediaPool;
  private readonly api: XxHashApi;
  private splitter = new BlockSplitter();
  private pending: Promise<bigint[]>[] = [];

  constructor(pool: MediaPool, api: XxHashApi) {
    this.pool = pool;
    this.api = api;
  }

  push(chunk: Buffer): void {
    const blocks = this.splitter.push(chunk);
    if (blocks.length === 0) return;
    // A block that is the chunk itself is still queued in the storage writer: it must be copied,
    // not transferred. Blocks the splitter assembled are its own and move to the worker for free.
    const aliasesChunk = blocks.some((block) => block.buffer === chunk.buffer);
    const hashes = this.pool.hashBlocks(blocks, { transfer: !aliasesChunk });
    // Hashes of an abandoned file may still fail (pool closing); nobody awaits them then.
    hashes.catch(() => undefined);
    this.pending.push(hashes);
  }

  reset(): void {
    this.splitter = new BlockSplitter();
    this.pending = [];
  }

  async digest(): Promise<string> {
    const last = this.splitter.flush();
    const hashes = (await Promise.all(this.pending)).flat();
    if (last && last.length > 0) hashes.push(hashBlock(this.api, last));
    return combineBlockHashes(this.api, hashes);
  }
}
