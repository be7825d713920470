import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { parseTransform, resolveTransform } from '../../src/domain/media/image-transform-params.ts';
import type { TransformTaskResult } from '../../src/pool/media-task-types.ts';
import { ImageTransformer, type TransformResult } from '../../src/previews/image-transformer.ts';
import type { CachedTransform, NewTransform } from '../../src/previews/transform-cache.ts';
import { FsObjectStore } from '../../src/storage/fs/fs-object-store.ts';
import { writeBuffer } from '../../src/storage/write-buffer.ts';

// The transformer's own rules, with a pool whose resizes the test finishes by hand (so "at the
// same time" is certain, not a race): one resize per variant at a time, the queue bound (503),
// a cached variant whose object went is made again, a file deleted meanwhile leaves nothing.

const FILE = { id: '0b7d2a5e-1c2f-4f3a-8e6d-5a4b3c2d1e0f', teamId: '7d2f0d55-2b8e-4a42-9d44-4d0a3b1c2e3f', storageKey: 'media/t/f', size: 4 };
const variant = (query: string) => resolveTransform(parseTransform(new URLSearchParams(query))!, 'image/png');

/** An in-memory media_transform. */
class MemoryCache {
  readonly rows = new Map<string, NewTransform>();
  fileGone = false;
  async use(mediaId: string, name: string): Promise<CachedTransform | null> {
    return this.rows.get(`${mediaId}/${name}`) ?? null;
  }
  async record(entry: NewTransform): Promise<'recorded' | 'gone'> {
    if (this.fileGone) return 'gone';
    this.rows.set(`${entry.mediaId}/${entry.variant}`, entry);
    return 'recorded';
  }
  async forget(mediaId: string, name: string): Promise<void> {
    this.rows.delete(`${mediaId}/${name}`);
  }
  async evict(): Promise<string[]> {
    return [];
  }
}

/** A pool whose resizes wait until the test releases them. */
class HeldPool {
  readonly started: (() => void)[] = [];
  /** What every resize answers instead of an image. */
  outcome: 'made' | 'undecodable' | 'too-large' = 'made';
  async transform(): Promise<TransformTaskResult> {
    await new Promise<void>((resolve) => this.started.push(resolve));
    if (this.outcome !== 'made') return { kind: 'transform', outcome: this.outcome, reason: 'sharp said no' };
    const data = new TextEncoder().encode('resized').buffer as ArrayBuffer;
    return { kind: 'transform', outcome: 'made', data, width: 1, height: 1 };
  }
  releaseAll(): void {
    for (const release of this.started.splice(0)) release();
  }
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}

async function setUp(t: Test, settings: { concurrency: number; queueLimit: number }) {
  const root = await mkdtemp(join(tmpdir(), 'transformer-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const store = new FsObjectStore({ root, durable: false });
  await writeBuffer(store, FILE.storageKey, Buffer.from('png!'), 'image/png');
  const cache = new MemoryCache();
  const pool = new HeldPool();
  const results: TransformResult[] = [];
  const transformer = new ImageTransformer({
    cache, store, pool, logger: { warn() {}, error() {} },
    settings: { ...settings, cacheBytes: 1024, maxSourceBytes: 1024, maxPixels: 1_000_000 },
    onResult: (result) => results.push(result),
  });
  return { store, cache, pool, results, transformer };
}

async function text(body: AsyncIterable<Buffer> | null): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of body ?? []) chunks.push(chunk);
  return Buffer.concat(chunks).toString();
}

t.test('requests of one variant while it is made share its one resize', async (t) => {
  const { pool, results, transformer, cache } = await setUp(t, { concurrency: 1, queueLimit: 0 });
  const answers = [1, 2, 3].map(() => transformer.get(FILE, variant('w=64'), { withBody: true }));
  await until(() => pool.started.length === 1);
  pool.releaseAll();
  for (const answer of await Promise.all(answers)) t.equal(await text(answer.body), 'resized');
  t.same(results.sort(), ['miss', 'shared', 'shared']);
  t.equal(cache.rows.size, 1);
  const again = await transformer.get(FILE, variant('w=64'), { withBody: true });
  t.equal(await text(again.body), 'resized', 'then from the store');
  t.equal(results.at(-1), 'hit');
  const head = await transformer.get(FILE, variant('w=64'), { withBody: false });
  t.same(head, { size: 7, body: null }, 'HEAD of a cached variant reads nothing');
});

t.test('past concurrency and queue limit another variant answers 503 with Retry-After', async (t) => {
  const { pool, results, transformer } = await setUp(t, { concurrency: 1, queueLimit: 1 });
  const running = transformer.get(FILE, variant('w=64'), { withBody: true });
  await until(() => pool.started.length === 1);
  const waiting = transformer.get(FILE, variant('w=128'), { withBody: true });
  await t.rejects(transformer.get(FILE, variant('w=256'), { withBody: true }), { message: /^Too many images are being resized/, status: 503, messageKey: 'error.serviceUnavailable', headers: { 'Retry-After': '2' } });
  t.same(results, ['busy']);
  pool.releaseAll();
  await running;
  await until(() => pool.started.length === 1);
  pool.releaseAll();
  await waiting;
  t.same(results, ['busy', 'miss', 'miss'], 'the waiting one is made after the running one');
});

t.test('a cached variant whose object is gone is made again; a file deleted meanwhile leaves no object', async (t) => {
  const { pool, results, transformer, cache, store } = await setUp(t, { concurrency: 2, queueLimit: 2 });
  const first = transformer.get(FILE, variant('w=64'), { withBody: true });
  await until(() => pool.started.length === 1);
  pool.releaseAll();
  await first;
  const [entry] = [...cache.rows.values()];
  await store.remove(entry!.storageKey);
  const again = transformer.get(FILE, variant('w=64'), { withBody: true });
  await until(() => pool.started.length === 1);
  pool.releaseAll();
  t.equal(await text((await again).body), 'resized');
  t.same(results, ['miss', 'miss'], 'the lost object is resized again');
  t.ok(await store.stat(entry!.storageKey), 'and stored again');

  cache.fileGone = true;
  const orphan = transformer.get(FILE, variant('w=128'), { withBody: true });
  await until(() => pool.started.length === 1);
  pool.releaseAll();
  await t.rejects(orphan, { message: /^Could not find media file/, status: 404 });
  t.equal(await store.stat(`transforms/${FILE.teamId}/${FILE.id}/128xauto-inside.png`), null, 'its object is removed');
});

t.test('a source larger than the bound is refused before it is read', async (t) => {
  const { pool, results, transformer } = await setUp(t, { concurrency: 1, queueLimit: 1 });
  await t.rejects(transformer.get({ ...FILE, size: 2048 }, variant('w=64'), { withBody: true }), { status: 400, message: /larger than/ });
  t.equal(pool.started.length, 0);
  t.same(results, ['refused']);
});

t.test('a file that cannot be decoded is decoded once: later requests, of any variant, are refused at once', async (t) => {
  const { pool, results, transformer, cache } = await setUp(t, { concurrency: 1, queueLimit: 1 });
  pool.outcome = 'undecodable';
  const first = transformer.get(FILE, variant('w=64'), { withBody: true });
  await until(() => pool.started.length === 1);
  pool.releaseAll();
  await t.rejects(first, { status: 400, message: /cannot be decoded/ });
  for (const query of ['w=64', 'w=128&format=webp']) {
    await t.rejects(transformer.get(FILE, variant(query), { withBody: true }), { status: 400, message: /cannot be decoded/ }, query);
  }
  t.equal(pool.started.length, 0, 'no second decode');
  t.same(results, ['refused', 'refused', 'refused']);
  t.equal(cache.rows.size, 0, 'nothing cached');
});
