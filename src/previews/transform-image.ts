import type { TransformTask, TransformTaskResult } from '../pool/media-task-types.ts';
import { loadSharp } from './thumbnail-image.ts';

/** Fast encodings: a resize is made while its client waits (AVIF's default effort takes seconds on a large image). */
const ENCODE_EFFORT = { webp: 4, avif: 2 } as const;

/**
 * In a worker thread: an image resized on request (src/previews/image-transformer.ts), turned
 * upright by its EXIF orientation, without metadata, never enlarged. `cover` crops to the box,
 * `contain` letterboxes into it (transparent, white for JPEG), `inside` fits within it; with no
 * side given the image keeps its size up to `maxSide`. More pixels than `maxPixels` answers
 * `too-large` before decoding; any other error of sharp answers `undecodable`.
 */
export async function transformImage(task: TransformTask): Promise<TransformTaskResult> {
  const sharp = await loadSharp();
  const { width, height, fit, format, quality } = task.transform;
  const noSide = width === null && height === null;
  try {
    let image = sharp(new Uint8Array(task.image), { limitInputPixels: task.maxPixels, failOn: 'error', animated: false })
      .autoOrient()
      .resize({
        width: noSide ? task.maxSide : width ?? undefined,
        height: noSide ? task.maxSide : height ?? undefined,
        fit,
        withoutEnlargement: true,
        background: format === 'jpeg' ? '#ffffff' : { r: 0, g: 0, b: 0, alpha: 0 },
      });
    if (format === 'jpeg') image = image.flatten({ background: '#ffffff' }).jpeg({ quality: quality ?? undefined });
    else if (format === 'webp') image = image.webp({ quality: quality ?? undefined, effort: ENCODE_EFFORT.webp });
    else if (format === 'avif') image = image.avif({ quality: quality ?? undefined, effort: ENCODE_EFFORT.avif });
    else image = image.png();
    const { data, info } = await image.toBuffer({ resolveWithObject: true });
    const own = new Uint8Array(data.byteLength);
    own.set(data);
    return { kind: 'transform', outcome: 'made', data: own.buffer, width: info.width, height: info.height };
  } catch (error) {
    const reason = (error as Error).message.slice(0, 200);
    return { kind: 'transform', outcome: /pixel limit/i.test(reason) ? 'too-large' : 'undecodable', reason };
  }
}
