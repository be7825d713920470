import PQueue from 'p-queue';
import { imageNotStrippable, imageTooLargeToStrip } from '../../errors/errors.ts';
import type { MediaPool } from '../../pool/media-pool.ts';
import type { ObjectStore } from '../../storage/object-store.ts';
import { readBuffer } from '../../storage/read-buffer.ts';
import { writeBuffer } from '../../storage/write-buffer.ts';
import { isStrippable } from './image-filter.ts';

export interface MetadataStripperOptions {
  store: ObjectStore;
  pool: MediaPool;
  /** Images larger than this are refused (413): each strip holds the whole image in memory. */
  maxBytes: number;
  /** Images of more pixels than this are refused (422) when they must be decoded to be turned upright. */
  maxPixels: number;
  /** Strips running at once (each holds its image in memory); the rest wait. */
  concurrency: number;
}

/** What is stored after a strip: the size and content hash the row and the quota count. */
export interface StrippedContent {
  size: number;
  hash: string;
}

/**
 * Strips the metadata of an image already written under its key (not yet committed), in the
 * worker pool, and writes the stripped image over it. Working on the stored object rather than on
 * the stream lets every upload path use it (a JSON body's options come after its file, a tus
 * upload's bytes across requests) with one image in memory per running strip, at the cost of
 * reading and writing the image once more.
 */
export class MetadataStripper {
  private readonly options: MetadataStripperOptions;
  private readonly running: PQueue;

  constructor(options: MetadataStripperOptions) {
    this.options = options;
    this.running = new PQueue({ concurrency: options.concurrency });
  }

  /**
   * Strips the object under `key` of `contentType` and `size` bytes. Answers null when it stays as
   * it is (not a JPEG, PNG or WebP, or no metadata), else what is stored now. Throws 413 for an
   * image above the size limit and 422 for one that cannot be read: the caller removes the object.
   */
  async strip(key: string, contentType: string | null, size: number): Promise<StrippedContent | null> {
    const stripped = await this.stripWith(() => readBuffer(this.options.store, key), contentType, size, async (data) => {
      await writeBuffer(this.options.store, key, data, 'application/octet-stream');
    });
    return stripped && { size: stripped.size, hash: stripped.hash };
  }

  /** The same for a file's bytes in memory (a small file bound for the database): the stripped bytes, or null. */
  stripBytes(content: Buffer, contentType: string | null): Promise<(StrippedContent & { data: Buffer }) | null> {
    return this.stripWith(async () => content, contentType, content.length, async () => undefined);
  }

  private async stripWith(
    source: () => Promise<Buffer>, contentType: string | null, size: number, keep: (data: Buffer) => Promise<void>,
  ): Promise<(StrippedContent & { data: Buffer }) | null> {
    if (!isStrippable(contentType)) return null;
    const { pool, maxBytes, maxPixels } = this.options;
    if (size > maxBytes) throw imageTooLargeToStrip(maxBytes);
    const stripped = await this.running.add(async () => {
      const result = await pool.stripMetadata(await source(), { contentType, maxPixels });
      if (result.outcome === 'refused') throw imageNotStrippable(result.reason);
      if (result.outcome === 'unchanged') return null;
      const data = Buffer.from(result.data);
      await keep(data);
      return { data, size: data.length, hash: result.hash };
    });
    return stripped ?? null;
  }
}
