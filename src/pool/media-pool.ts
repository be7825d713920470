/**
 * The worker pool for CPU work on uploads (block hashing, type sniffing), so the event loop
 * never blocks for long. A thin typed wrapper over piscina; the worker is workers/media-tasks.ts.
 */
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { MAX_SNIFF_BYTES, type SniffResult } from '../uploads/sniffing/sniff-content.ts';
import type {
  MediaTask, MediaTaskResult, MediaTaskResultFor, StripMetadataTask, StripMetadataTaskResult, TransformTask, TransformTaskResult,
} from './media-task-types.ts';

const WORKER_FILE = fileURLToPath(new URL('../../workers/media-tasks.ts', import.meta.url));

/** Idle threads above the minimum are ended after this long; the pool keeps all threads (min = max), so this is only a backstop. */
const IDLE_TIMEOUT_MS = 5 * 60_000;

export interface MediaPoolOptions {
  /** Worker threads, all started up front and kept (the service passes WORKER_THREADS). */
  threads: number;
  /**
   * Pool errors not tied to a task (a worker thread that died while idle; piscina replaces it).
   * Errors of a task reject that task's promise instead. Default: process.emitWarning.
   * Ignored once close() was called (piscina reports the results of tasks it cut off).
   */
  onError?: (error: Error) => void;
}

export interface HashBlocksOptions {
  /**
   * true (default): transfer each block's memory when it is eligible (see hashBlocks);
   * false: never transfer, always copy (the caller keeps every buffer intact).
   */
  transfer?: boolean;
}

/**
 * An ArrayBuffer holding exactly the bytes of `view`, and whether it is the view's own memory.
 *
 * The view's own ArrayBuffer is used (zero copy) only when the view covers all of it: byteOffset 0
 * and byteLength equal to the ArrayBuffer's. That excludes slices of Node's shared allocation pool
 * (small Buffers live at an offset inside an 8 KiB pool ArrayBuffer, shared with unrelated data)
 * and views into larger buffers; SharedArrayBuffers cannot be transferred at all. Everything else
 * is copied into a fresh ArrayBuffer, which is then transferred (so it is copied once, not twice).
 */
function ownArrayBuffer(view: Uint8Array, mayTransferOriginal: boolean): ArrayBuffer {
  const buffer = view.buffer;
  if (mayTransferOriginal && buffer instanceof ArrayBuffer && view.byteOffset === 0 && view.byteLength === buffer.byteLength) return buffer;
  return copyOf(view).buffer;
}

/** A copy in a new ArrayBuffer of its own. (Not view.slice(): on a Buffer that is a view, not a copy.) */
function copyOf(view: Uint8Array): Uint8Array<ArrayBuffer> {
  const copy = new Uint8Array(view.byteLength);
  copy.set(view);
  return copy;
}

export class MediaPool {
  private readonly pool: Piscina<MediaTask, MediaTaskResult>;
  private closing: Promise<void> | null = null;

  constructor({ threads, onError }: MediaPoolOptions) {
    if (!Number.isInteger(threads) || threads < 1) throw new RangeError(`MediaPool threads must be a positive integer, not ${threads}`);
    this.pool = new Piscina<MediaTask, MediaTaskResult>({
      filename: WORKER_FILE,
      name: 'default',
      // Threads start with the first task and stop when idle: by default nothing is sent to the
      // pool (inline hashing and sniffing measured faster, docs/performance.md), and each idle
      // thread held ~30 MB of RSS.
      minThreads: 0,
      maxThreads: threads,
      idleTimeout: IDLE_TIMEOUT_MS,
      // One CPU-bound task per thread at a time; queued tasks wait in the (unbounded) pool queue.
      concurrentTasksPerWorker: 1,
    });
    // piscina emits 'error' for failures outside a task; unheard, an 'error' event would end the process.
    this.pool.on('error', (error: Error) => {
      if (this.closing) return;
      if (onError) onError(error);
      else process.emitWarning(error);
    });
  }

  private async run<Task extends MediaTask>(task: Task, transferList: ArrayBuffer[] = []): Promise<MediaTaskResultFor<Task>> {
    // piscina itself would start new threads for a task after destroy().
    if (this.closing) throw new Error('MediaPool is closed');
    const answer = await this.pool.run(task, { transferList });
    if (answer.kind !== task.kind) throw new Error(`Media worker answered a ${task.kind} task with ${answer.kind}`);
    return answer as MediaTaskResultFor<Task>;
  }

  /**
   * xxh64 (seed 0) of each block in a worker, in order (hashBlock of src/uploads/hashing/content-hash.ts).
   *
   * Memory: a block that owns its whole ArrayBuffer (byteOffset 0, byteLength equal to the
   * ArrayBuffer's, not a SharedArrayBuffer) is TRANSFERRED to the worker, not copied: from this
   * call on, that Buffer and every other view of the same ArrayBuffer are detached (length 0).
   * The caller must not use or reuse such a buffer afterwards. Note that BlockSplitter returns a
   * chunk that is exactly one aligned 1 MiB block as-is, so that chunk itself gets detached; pass
   * { transfer: false } while the chunks are still needed elsewhere (e.g. by a storage writer).
   * Any other block (a slice of a larger buffer or of Node's pool) is copied into a fresh
   * ArrayBuffer first and stays intact.
   */
  async hashBlocks(blocks: Buffer[], options: HashBlocksOptions = {}): Promise<bigint[]> {
    if (this.closing) throw new Error('MediaPool is closed');
    if (blocks.length === 0) return [];
    const transfer = options.transfer ?? true;
    const seen = new Set<ArrayBufferLike>();
    const buffers = blocks.map((block) => {
      // The same ArrayBuffer twice in one transfer list is an error; copy the repeats.
      const own = ownArrayBuffer(block, transfer && !seen.has(block.buffer));
      seen.add(block.buffer);
      return own;
    });
    const { hashes } = await this.run({ kind: 'hashBlocks', blocks: buffers }, buffers);
    return hashes;
  }

  /** sniffContent() of a file's first bytes in a worker. Only the first MAX_SNIFF_BYTES are sent, as a copy; `head` stays intact. */
  async sniff(head: Uint8Array): Promise<SniffResult> {
    const copy = copyOf(head.subarray(0, MAX_SNIFF_BYTES));
    const { result } = await this.run({ kind: 'sniff', head: copy }, [copy.buffer]);
    return result;
  }

  /**
   * A resized image in a worker (transformImage of src/previews/transform-image.ts). `image` is
   * TRANSFERRED when it owns its whole ArrayBuffer (as hashBlocks explains; it is detached then),
   * copied otherwise: the caller read it from storage for this task only.
   */
  async transform(image: Buffer, options: Omit<TransformTask, 'kind' | 'image'>): Promise<TransformTaskResult> {
    const buffer = ownArrayBuffer(image, true);
    return this.run({ kind: 'transform', image: buffer, ...options }, [buffer]);
  }

  /**
   * The image without its metadata, in a worker (stripImageMetadata of src/uploads/metadata/strip-image.ts).
   * `image` is transferred when it owns its whole ArrayBuffer (then detached here: the caller
   * must not use it afterwards), else copied.
   */
  async stripMetadata(image: Buffer, options: Omit<StripMetadataTask, 'kind' | 'image'>): Promise<StripMetadataTaskResult> {
    const buffer = ownArrayBuffer(image, true);
    return this.run({ kind: 'stripMetadata', image: buffer, ...options }, [buffer]);
  }

  /** Share of the pool's thread time spent running tasks so far, 0 to 1 (piscina's estimate). */
  get utilization(): number {
    return this.pool.utilization;
  }

  /** Ends the threads at once; tasks still queued or running are rejected, and so is every later call. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.pool.destroy();
    return this.closing;
  }
}
