import type { ObjectStore, ReadOptions } from './object-store.ts';

/** The object under `key` (or the range of it) as one Buffer. Rejects with the store's StorageError (not-found, unavailable, ...). */
export async function readBuffer(store: Pick<ObjectStore, 'read'>, key: string, range?: ReadOptions): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await store.read(key, range)) chunks.push(chunk);
  return Buffer.concat(chunks);
}
