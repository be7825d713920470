/**
 * Messages between MediaPool (main thread) and workers/media-tasks.ts (worker threads).
 * Types only: no runtime code, so both sides can import it freely.
 *
 * Everything here crosses threads by structured clone: ArrayBuffers (transferred by the pool),
 * bigint block hashes, plain objects.
 */
import type { SniffResult } from '../uploads/sniffing/sniff-content.ts';

/** Hash whole blocks of the content hash (src/uploads/hashing/content-hash.ts), each with hashBlock(). */
export interface HashBlocksTask {
  kind: 'hashBlocks';
  /** Each ArrayBuffer is exactly one block (usually 1 MiB), in content order. */
  blocks: ArrayBuffer[];
}

export interface HashBlocksResult {
  kind: 'hashBlocks';
  /** xxh64 (seed 0) of each block, in the order of the task's blocks. */
  hashes: bigint[];
}

/** Sniff the first bytes of a file with sniffContent(). */
export interface SniffTask {
  kind: 'sniff';
  head: Uint8Array;
}

export interface SniffTaskResult {
  kind: 'sniff';
  result: SniffResult;
}

export type MediaTask = HashBlocksTask | SniffTask;
export type MediaTaskResult = HashBlocksResult | SniffTaskResult;

/** The result type that answers a given task type. */
export type MediaTaskResultFor<Task extends MediaTask> = Extract<MediaTaskResult, { kind: Task['kind'] }>;
