import { InlineContentHasher } from '../uploads/hashing/content-hasher.ts';
import type { XxHashApi } from '../uploads/hashing/content-hash.ts';
import type { ObjectStore } from '../storage/object-store.ts';

export interface CopiedObject {
  /** Bytes read from the source (and written to the target). */
  size: number;
  /** The content hash of the bytes read from the source. */
  sourceHash: string;
}

/**
 * Streams one object from `source` to `target` under the same key, through the stores' public
 * interface, hashing what passes. On any failure the target's writer is aborted (nothing left).
 */
export async function copyObject(source: ObjectStore, target: ObjectStore, key: string, options: { contentType: string; size: number; xxhash: XxHashApi }): Promise<CopiedObject> {
  const input = await source.read(key);
  const writer = target.openWriter(key, { contentType: options.contentType, expectedSize: options.size });
  const hasher = new InlineContentHasher(options.xxhash);
  let failure: Error | null = null;
  let wake: (() => void) | null = null;
  writer.onError((error) => {
    failure = error;
    wake?.();
  });
  writer.onDrain(() => wake?.());
  let size = 0;
  try {
    for await (const chunk of input) {
      if (failure) throw failure;
      hasher.push(chunk);
      size += chunk.length;
      if (!writer.write(chunk)) {
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = null;
      }
    }
    if (failure) throw failure;
    await writer.finish();
  } catch (error) {
    await writer.abort();
    // The source may still be open after a failure of the target.
    (input as { destroy?: () => void }).destroy?.();
    throw error;
  }
  return { size, sourceHash: await hasher.digest() };
}

/** Reads `key` back from `store`: its size and content hash, to verify a copy. */
export async function hashStoredObject(store: ObjectStore, key: string, xxhash: XxHashApi): Promise<{ size: number; hash: string }> {
  const hasher = new InlineContentHasher(xxhash);
  let size = 0;
  for await (const chunk of await store.read(key)) {
    hasher.push(chunk);
    size += chunk.length;
  }
  return { size, hash: await hasher.digest() };
}
