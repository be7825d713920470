import { readFile } from 'node:fs/promises';
import type { ThumbnailTask, ThumbnailTaskResult } from '../pool/media-task-types.ts';

type Sharp = (typeof import('sharp'))['default'];

let loaded: Promise<Sharp> | null = null;

/** sharp, loaded on the first thumbnail, transform or metadata strip (a worker that only hashes never pays for libvips). */
export function loadSharp(): Promise<Sharp> {
  loaded ??= import('sharp').then(({ default: sharp }) => {
    // One libvips thread per pool thread: the pool is the service's bound on CPU work, and libvips'
    // own pool (a thread per core by default) would multiply it. No operation cache: every image is new.
    sharp.concurrency(1);
    sharp.cache(false);
    return sharp;
  });
  return loaded;
}

/** Reads an object of the preview process's own store by key: its bytes, or null when there is no such object. */
export type ObjectReader = (key: string) => Promise<Uint8Array | null>;

/** The image's bytes; null when its file or object is not there. */
async function sourceBytes(source: ThumbnailTask['source'], objects: ObjectReader | null): Promise<Uint8Array | null> {
  if ('image' in source) return source.image;
  if ('key' in source) {
    if (!objects) throw new Error('the preview process has no object store to read the image from');
    return objects(source.key);
  }
  try {
    return await readFile(source.file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
    throw error;
  }
}

export interface MakeThumbnailOptions {
  /** Reads `{ key }` sources (absent: none may come). */
  objects?: ObjectReader | null;
  /** Runs the decode and encode (a limit on how many at once); the read of the source is not in it. Default: at once. */
  decode?: <T>(work: () => Promise<T>) => Promise<T>;
}

/**
 * In the preview process: the thumbnail of an image as WebP, at most `maxSide` pixels on its long
 * side, turned upright by its EXIF orientation, without metadata. Every error of sharp (unknown or
 * damaged format, more pixels than `maxPixels`) answers `undecodable`: the same bytes fail the
 * same way every time.
 */
export async function makeThumbnail(task: ThumbnailTask, options: MakeThumbnailOptions = {}): Promise<ThumbnailTaskResult> {
  const image = await sourceBytes(task.source, options.objects ?? null);
  if (image === null) return { kind: 'thumbnail', outcome: 'missing' };
  return options.decode ? options.decode(() => encode(image, task)) : encode(image, task);
}

async function encode(image: Uint8Array, task: ThumbnailTask): Promise<ThumbnailTaskResult> {
  const sharp = await loadSharp();
  try {
    const { data, info } = await sharp(image, { limitInputPixels: task.maxPixels, failOn: 'error', animated: false })
      .autoOrient()
      .resize({ width: task.maxSide, height: task.maxSide, fit: 'inside', withoutEnlargement: true })
      .webp({ quality: task.quality, effort: 2 })
      .toBuffer({ resolveWithObject: true });
    const own = new Uint8Array(data.byteLength);
    own.set(data);
    return { kind: 'thumbnail', outcome: 'made', data: own.buffer, width: info.width, height: info.height };
  } catch (error) {
    return { kind: 'thumbnail', outcome: 'undecodable', reason: (error as Error).message.slice(0, 200) };
  }
}
