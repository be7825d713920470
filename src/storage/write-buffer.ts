import type { ObjectStore } from './object-store.ts';

/** Stores `data` under `key` in one write; on failure the writer is aborted (nothing left) and the error thrown. */
export async function writeBuffer(store: Pick<ObjectStore, 'openWriter'>, key: string, data: Buffer, contentType: string): Promise<void> {
  const writer = store.openWriter(key, { contentType, expectedSize: data.length });
  let failure: Error | null = null;
  writer.onError((error) => (failure = error));
  try {
    writer.write(data);
    await writer.finish();
  } catch (error) {
    await writer.abort();
    throw failure ?? error;
  }
}
