import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import PQueue from 'p-queue';
import type { Config } from '../config/config.ts';
import type { Logger } from '../logging/logger.ts';
import type { DatabaseFirstStore } from '../storage/db/database-first-store.ts';
import { isStorageError, StorageError, type ObjectStore } from '../storage/object-store.ts';
import { readBuffer } from '../storage/read-buffer.ts';
import { isDatabaseLocation } from '../storage/storage-location.ts';
import { writeBuffer } from '../storage/write-buffer.ts';
import { THUMBNAIL_CONTENT_TYPE, thumbnailStorageKey } from '../domain/media/thumbnail-links.ts';
import type { ThumbnailTask } from '../pool/media-task-types.ts';
import type { PreviewProcess } from './preview-process.ts';
import type { ThumbnailJob, ThumbnailQueue } from './thumbnail-queue.ts';
import { extractPoster, ffmpegAvailable, PosterError } from './video-poster.ts';

/** An idle thumbnailer looks for work this often anyway: images committed by other instances, expired claims. */
const POLL_MS = 15_000;
/** While uploads wait for a slot, thumbnails wait this long before looking again. */
const BUSY_PAUSE_MS = 250;
const WEBP_QUALITY = 75;
/**
 * Thumbnails claimed per preview slot (THUMBNAIL_CONCURRENCY): while one is made, the next ones'
 * images are read and the last one's thumbnail stored, so storage round trips (S3's tens of ms)
 * overlap the CPU work instead of adding to it.
 */
const IN_HAND_PER_SLOT = 4;
const NOT_IN_STORAGE = 'the file is not in storage';

export type ThumbnailOutcome = 'made' | 'failed' | 'retried';

/** The media files' storage as the thumbnailer uses it: files read where their rows say, thumbnails written to the object store. */
export type ThumbnailStore = Pick<ObjectStore, 'openWriter' | 'remove'> & Pick<DatabaseFirstStore, 'readAt' | 'localPathAt'>;

export interface ThumbnailerOptions {
  queue: ThumbnailQueue;
  store: ThumbnailStore;
  /** Where the thumbnails are made: the low-priority preview process. */
  previews: Pick<PreviewProcess, 'thumbnail' | 'readsObjects'>;
  settings: Config['thumbnails'];
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** True while uploads wait for an admission slot: thumbnails give way to them. */
  uploadsWaiting: () => boolean;
  /** Counts each thumbnail's outcome (metrics). */
  onOutcome?: (outcome: ThumbnailOutcome) => void;
}

/**
 * Makes the thumbnails of image uploads after their commit, off every upload's answer path: claims
 * a few from the queue (`concurrency`, so the preview process never holds more of them than that),
 * reads each image, makes the thumbnail in the preview process (at the lowest CPU priority) and
 * stores it in the same store as the file.
 * Committing instances wake their own thumbnailer; the others poll. Never throws: failures are
 * logged, and the queue decides what is tried again.
 */
export class Thumbnailer {
  private readonly options: ThumbnailerOptions;
  private running: Promise<void> | null = null;
  private stopped = false;
  private wakeUp: (() => void) | null = null;
  private woken = false;
  /** The ffmpeg that makes video posters, once found at start; null: videos are left to instances that have one. */
  private ffmpeg: string | null = null;
  /** ffmpeg's posters: `concurrency` at a time (the preview process holds its own decodes to it). */
  private readonly posters: PQueue;

  constructor(options: ThumbnailerOptions) {
    this.options = options;
    this.posters = new PQueue({ concurrency: Math.max(1, options.settings.concurrency) });
  }

  start(): void {
    if (this.running || this.options.settings.concurrency === 0) return;
    this.running = (async () => {
      await this.findFfmpeg();
      await this.releasePreviousIncarnations();
      await this.loop();
    })();
  }

  /** Looks for FFMPEG_PATH once; without it, this instance claims images only. */
  async findFfmpeg(): Promise<void> {
    const ffmpeg = this.options.settings.ffmpegPath;
    this.ffmpeg = ffmpeg !== null && (await ffmpegAvailable(ffmpeg)) ? ffmpeg : null;
    if (this.ffmpeg === null) this.options.logger.info({ ffmpeg }, 'no ffmpeg: this instance makes no video posters');
  }

  /** The claims this instance held before a crash are claimed again now, not when they expire. */
  private async releasePreviousIncarnations(): Promise<void> {
    try {
      const released = await this.options.queue.releasePreviousIncarnations();
      if (released > 0) this.options.logger.info({ thumbnails: released }, "released the previous incarnation's thumbnail claims");
    } catch (error) {
      this.options.logger.warn({ err: error }, "releasing the previous incarnation's thumbnail claims failed; they expire instead");
    }
  }

  /** New images were committed: look now instead of at the next poll. */
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /** Claims nothing more; resolves once the thumbnails in hand are done (their claims then expire harmlessly if not). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wakeUp?.();
    await this.running;
  }

  /** One round: claims and makes up to IN_HAND_PER_SLOT × `concurrency` thumbnails; answers how many were claimed. */
  async runOnce(): Promise<number> {
    const jobs = await this.options.queue.claim(Math.max(1, this.options.settings.concurrency) * IN_HAND_PER_SLOT, this.ffmpeg !== null);
    await Promise.all(jobs.map((job) => this.make(job)));
    return jobs.length;
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      if (this.options.uploadsWaiting()) {
        await this.pause(BUSY_PAUSE_MS);
        continue;
      }
      let claimed = 0;
      try {
        this.woken = false;
        claimed = await this.runOnce();
      } catch (error) {
        this.options.logger.error({ err: error }, 'claiming thumbnails failed');
      }
      if (claimed === 0 && !this.woken) await this.pause(POLL_MS);
    }
  }

  private pause(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      timer.unref();
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = () => {
        this.wakeUp = null;
        done();
      };
    });
  }

  private async make(job: ThumbnailJob): Promise<void> {
    const { queue, settings, logger } = this.options;
    const log = { mediaId: job.mediaId, teamId: job.teamId };
    try {
      const video = job.contentType.startsWith('video/');
      const limit = video ? settings.maxVideoBytes : settings.maxSourceBytes;
      if (job.size > limit) return this.finish(job, 'failed', () => queue.fail(job, `the file is larger than ${limit} bytes`));
      let source: ThumbnailTask['source'];
      try {
        source = video ? { image: await this.posters.add(() => this.poster(job)) } : await this.source(job);
      } catch (error) {
        // Deleted meanwhile (the fail then changes nothing), or lost from its store.
        if (isStorageError(error) && error.code === 'not-found') return this.finish(job, 'failed', () => queue.fail(job, NOT_IN_STORAGE));
        if (error instanceof PosterError) return this.finish(job, 'failed', () => queue.fail(job, error.message));
        throw error;
      }
      const options = { maxSide: settings.size, maxPixels: settings.maxPixels, quality: WEBP_QUALITY };
      // The preview process holds the decodes to THUMBNAIL_CONCURRENCY; it reads the sources meanwhile.
      const result = await this.options.previews.thumbnail(source, options);
      if (result.outcome === 'missing') return this.finish(job, 'failed', () => queue.fail(job, NOT_IN_STORAGE));
      if (result.outcome === 'undecodable') {
        logger.info({ ...log, reason: result.reason }, 'no thumbnail: the image cannot be decoded');
        return this.finish(job, 'failed', () => queue.fail(job, result.reason));
      }
      const key = thumbnailStorageKey(job.teamId, job.mediaId);
      const data = Buffer.from(result.data);
      await writeBuffer(this.options.store, key, data, THUMBNAIL_CONTENT_TYPE);
      const completed = await queue.complete(job, data.length);
      // Deleted while the thumbnail was made: its deletion found nothing to remove, so this does.
      if (completed === 'gone') await this.options.store.remove(key);
      this.options.onOutcome?.('made');
    } catch (error) {
      logger.warn({ ...log, err: error }, 'making a thumbnail failed; it is tried again later');
      await this.finish(job, 'retried', () => queue.retryLater(job, (error as Error).message)).catch((retryError: unknown) => {
        logger.error({ ...log, err: retryError }, 'could not record a failed thumbnail; its claim expires and it is tried again');
      });
    }
  }

  private async finish(job: ThumbnailJob, outcome: ThumbnailOutcome, record: () => Promise<void>): Promise<void> {
    await record();
    this.options.onOutcome?.(outcome);
  }

  /**
   * The image as the preview process gets it: its file when the store keeps one on this machine, or
   * its key when the preview process reads the bucket itself (a 2 MiB screenshot read and copied
   * over the IPC channel by the service cost it more than the rest of its upload, in garbage
   * collection); the bytes of a file kept in the database.
   */
  private async source(job: ThumbnailJob): Promise<ThumbnailTask['source']> {
    const file = this.options.store.localPathAt(job.storageLocation, job.storageKey);
    if (file !== null) return { file };
    if (this.options.previews.readsObjects && !isDatabaseLocation(job.storageLocation)) return { key: job.storageKey };
    return { image: await readBuffer({ read: (key) => this.options.store.readAt(job.storageLocation, key) }, job.storageKey) };
  }

  /** A frame of the video, as PNG: ffmpeg reads the file, from a temp copy unless it is on this machine (it seeks, which a stream from S3 cannot). */
  private async poster(job: ThumbnailJob): Promise<Buffer> {
    const local = this.options.store.localPathAt(job.storageLocation, job.storageKey);
    if (local !== null) {
      const present = await stat(local).then((info) => info.isFile(), () => false);
      if (!present) throw new StorageError(`No object under ${job.storageKey}`, { code: 'not-found', operation: 'read', key: job.storageKey });
      return extractPoster(this.ffmpeg!, local);
    }
    const directory = await mkdtemp(path.join(tmpdir(), 'media-poster-'));
    try {
      const file = path.join(directory, 'video');
      await pipeline(await this.options.store.readAt(job.storageLocation, job.storageKey), createWriteStream(file));
      return await extractPoster(this.ffmpeg!, file);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  }
}
