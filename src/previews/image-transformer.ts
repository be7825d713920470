import PQueue from 'p-queue';
import type { Config } from '../config/config.ts';
import type { ResolvedTransform } from '../domain/media/image-transform-params.ts';
import { MAX_TRANSFORM_SIDE, transformStorageKey } from '../domain/media/image-transform-params.ts';
import { badRequest, notFound, serviceUnavailable } from '../errors/errors.ts';
import type { Logger } from '../logging/logger.ts';
import type { MediaPool } from '../pool/media-pool.ts';
import { isStorageError, type ObjectStore } from '../storage/object-store.ts';
import { readBuffer } from '../storage/read-buffer.ts';
import { writeBuffer } from '../storage/write-buffer.ts';
import type { TransformCache } from './transform-cache.ts';

/**
 * How a request for a resized image went: `hit` (from the cache), `miss` (made now), `shared`
 * (made for another request of the same variant at the same time), `refused` (out of bounds, not
 * an image, too large or not decodable: 400), `busy` (too many waiting: 503).
 */
export type TransformResult = 'hit' | 'miss' | 'shared' | 'refused' | 'busy';

/** The file a variant is made of: what its row says. */
export interface TransformSource {
  id: string;
  teamId: string;
  storageKey: string;
  size: number;
}

export interface TransformedImage {
  size: number;
  /** null when the body was not asked for (HEAD of a cached variant: nothing is read). */
  body: (AsyncIterable<Buffer> & { destroy?(): void }) | null;
}

export interface ImageTransformerOptions {
  cache: Pick<TransformCache, 'use' | 'record' | 'forget' | 'evict'>;
  store: ObjectStore;
  pool: Pick<MediaPool, 'transform'>;
  settings: Config['transforms'] & Pick<Config['thumbnails'], 'maxSourceBytes' | 'maxPixels'>;
  logger: Pick<Logger, 'warn' | 'error'>;
  onResult?: (result: TransformResult) => void;
}

/** Seconds a client is told to wait when too many resizes wait already. */
const BUSY_RETRY_AFTER_SECONDS = 2;
/** Files remembered as impossible to resize, per instance (the oldest forgotten first). */
const REMEMBERED_REFUSALS = 10_000;

/** One chunk as a stream body. */
function bodyOf(data: Buffer): AsyncIterable<Buffer> {
  return { async *[Symbol.asyncIterator]() { yield data; } };
}

/**
 * Resized images on request (docs/api.md, "Resized images"): a variant is read from the cache in
 * the file's store, or made in the worker pool, stored under `transforms/` and recorded. On one
 * instance, requests for a variant being made share that one resize; at most `concurrency`
 * resizes run at once and `queueLimit` wait, past that a miss answers 503, so a burst of misses
 * cannot take the pool from uploads. After each new variant the cache is brought back under its
 * budget by evicting the least recently used ones.
 */
export class ImageTransformer {
  private readonly options: ImageTransformerOptions;
  private readonly queue: PQueue;
  private readonly making = new Map<string, Promise<Buffer>>();
  private evicting: Promise<void> | null = null;
  private evictAgain = false;
  /**
   * Why a file cannot be resized (undecodable, too many pixels), by media id: a file's bytes never
   * change, so a repeated request for it is refused without reading and decoding it again.
   */
  private readonly refusals = new Map<string, string>();

  constructor(options: ImageTransformerOptions) {
    this.options = options;
    this.queue = new PQueue({ concurrency: options.settings.concurrency });
  }

  /** Counts a request refused before it reached the transformer (its parameters). */
  countRefused(): void {
    this.options.onResult?.('refused');
  }

  /** The variant `transform` of `file`; throws 400 when it cannot be made, 404 when the file went, 503 when busy. */
  async get(file: TransformSource, transform: ResolvedTransform, options: { withBody: boolean }): Promise<TransformedImage> {
    const { cache, store } = this.options;
    const cached = await cache.use(file.id, transform.variant);
    if (cached) {
      if (!options.withBody) return this.counted('hit', { size: cached.size, body: null });
      try {
        return this.counted('hit', { size: cached.size, body: await store.read(cached.storageKey) });
      } catch (error) {
        if (!isStorageError(error) || error.code !== 'not-found') throw error;
        // Evicted by another instance between the row and the read, or lost: made again.
        await cache.forget(file.id, transform.variant, cached.storageKey);
      }
    }
    const key = `${file.id}/${transform.variant}`;
    const shared = this.making.get(key);
    if (shared) {
      const data = await shared;
      return this.counted('shared', { size: data.length, body: bodyOf(data) });
    }
    if (file.size > this.options.settings.maxSourceBytes) {
      throw this.refused(`The image is larger than ${this.options.settings.maxSourceBytes / 1024 / 1024} MiB: it cannot be resized`);
    }
    const refusal = this.refusals.get(file.id);
    if (refusal) throw this.refused(refusal);
    if (this.queue.pending >= this.options.settings.concurrency && this.queue.size >= this.options.settings.queueLimit) {
      this.options.onResult?.('busy');
      throw serviceUnavailable('Too many images are being resized, retry later', BUSY_RETRY_AFTER_SECONDS);
    }
    const making = this.queue.add(() => this.make(file, transform)).finally(() => this.making.delete(key));
    this.making.set(key, making);
    const data = await making;
    return this.counted('miss', { size: data.length, body: bodyOf(data) });
  }

  /** Waits for an eviction in progress (shutdown, before the database closes). */
  async stop(): Promise<void> {
    await this.queue.onIdle();
    await this.evicting;
  }

  private counted(result: TransformResult, image: TransformedImage): TransformedImage {
    this.options.onResult?.(result);
    return image;
  }

  private refused(message: string): Error {
    this.options.onResult?.('refused');
    return badRequest(message);
  }

  private async make(file: TransformSource, transform: ResolvedTransform): Promise<Buffer> {
    const { store, pool, cache, settings } = this.options;
    let source: Buffer;
    try {
      source = await readBuffer(store, file.storageKey);
    } catch (error) {
      if (isStorageError(error) && error.code === 'not-found') throw notFound('media file');
      throw error;
    }
    const { width, height, fit, format, quality } = transform;
    const result = await pool.transform(source, { transform: { width, height, fit, format, quality }, maxSide: MAX_TRANSFORM_SIDE, maxPixels: settings.maxPixels });
    if (result.outcome !== 'made') {
      const refusal = result.outcome === 'too-large'
        ? `The image has more than ${settings.maxPixels / 1_000_000} megapixels: it cannot be resized`
        : 'The image cannot be decoded: it cannot be resized';
      this.remember(file.id, refusal);
      throw this.refused(refusal);
    }
    const data = Buffer.from(result.data);
    const storageKey = transformStorageKey(file.teamId, file.id, transform.variant);
    await writeBuffer(store, storageKey, data, transform.contentType);
    const recorded = await cache.record({ mediaId: file.id, teamId: file.teamId, variant: transform.variant, storageKey, size: data.length });
    if (recorded === 'gone') {
      // Deleted while it was made: its deletion did not see this variant.
      await store.remove(storageKey);
      throw notFound('media file');
    }
    this.scheduleEviction();
    return data;
  }

  private remember(mediaId: string, refusal: string): void {
    if (this.refusals.size >= REMEMBERED_REFUSALS) this.refusals.delete(this.refusals.keys().next().value!);
    this.refusals.set(mediaId, refusal);
  }

  /** One eviction at a time per instance; a request for one while it runs makes it run once more after. */
  private scheduleEviction(): void {
    if (this.evicting) {
      this.evictAgain = true;
      return;
    }
    this.evicting = (async () => {
      do {
        this.evictAgain = false;
        await this.evictOnce();
      } while (this.evictAgain);
    })()
      .catch((error: unknown) => this.options.logger.error({ err: error }, 'evicting resized images failed; the next new one tries again'))
      .finally(() => {
        this.evicting = null;
      });
  }

  private async evictOnce(): Promise<void> {
    const keys = await this.options.cache.evict(this.options.settings.cacheBytes);
    for (const key of keys) {
      try {
        await this.options.store.remove(key);
      } catch (error) {
        // Its row is gone, so nothing serves it; a new variant of the same name overwrites it.
        this.options.logger.warn({ err: error, storageKey: key }, 'removing an evicted resized image failed');
      }
    }
  }
}
