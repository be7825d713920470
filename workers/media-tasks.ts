/**
 * Piscina worker of MediaPool (src/pool/media-pool.ts): CPU work off the main thread.
 * Loaded by Node's type stripping like any other module of the service.
 *
 * One default-exported handler for every task kind (see src/pool/media-task-types.ts).
 */
import { hashBlock, loadXxhash } from '../src/uploads/hashing/content-hash.ts';
import { sniffContent } from '../src/uploads/sniffing/sniff-content.ts';
import { transformImage } from '../src/previews/transform-image.ts';
import { stripImageMetadata } from '../src/uploads/metadata/strip-image.ts';
import type { MediaTask, MediaTaskResult } from '../src/pool/media-task-types.ts';

// Start compiling the WebAssembly as soon as the thread loads this file, before the first task.
// (Not a top-level await: piscina first tries require(), which refuses modules with one.)
const xxhashReady = loadXxhash();

export default async function mediaTask(task: MediaTask): Promise<MediaTaskResult> {
  switch (task.kind) {
    case 'hashBlocks': {
      const api = await xxhashReady;
      return { kind: 'hashBlocks', hashes: task.blocks.map((block) => hashBlock(api, new Uint8Array(block))) };
    }
    case 'sniff':
      return { kind: 'sniff', result: sniffContent(task.head) };
    case 'transform':
      return transformImage(task);
    case 'stripMetadata':
      return stripImageMetadata(task, await xxhashReady);
    default: {
      const unknown: never = task;
      throw new TypeError(`Unknown media task: ${JSON.stringify((unknown as { kind?: unknown }).kind)}`);
    }
  }
}
