import { BlockSplitter, combineBlockHashes, hashBlock, type XxHashApi } from '../media/content-hash.ts';
import type { MediaPool } from '../pool/media-pool.ts';

/**
 * Feeds an upload's bytes into the content hash of src/media/content-hash.ts:
 * whole 1 MiB blocks are hashed in the worker pool while the upload goes on,
 * the last partial block inline (xxh64 of at most 1 MiB takes well under a
 * millisecond), so a small upload never pays for a round trip to a worker.
 */
export class ContentHasher {
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
