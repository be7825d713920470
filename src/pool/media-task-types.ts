/**
 * Messages between MediaPool (main thread) and workers/media-tasks.ts (worker threads).
 * Types only: no runtime code, so both sides can import it freely.
 *
 * Everything here crosses threads by structured clone: ArrayBuffers (transferred by the pool),
 * bigint block hashes, plain objects.
 */
import type { SniffResult } from '../uploads/sniffing/sniff-content.ts';
import type { ResolvedTransform } from '../domain/media/image-transform-params.ts';
import type { StrippableType } from '../uploads/metadata/image-filter.ts';

/** Hash whole blocks of the content hash (src/uploads/hashing/content-hash.ts), each with hashBlock(). */
export interface HashBlocksTask {
  kind: 'hashBlocks';
  /** Each ArrayBuffer is exactly one block (usually 1 MiB), in content order. */
  blocks: ArrayBuffer[];
}

export interface HashBlocksResult {
  kind: 'hashBlocks';
  /** xxh64 (seed 0) of each block, in the order of the task's blocks. */
  hashes: bigint[];
}

/** Sniff the first bytes of a file with sniffContent(). */
export interface SniffTask {
  kind: 'sniff';
  head: Uint8Array;
}

export interface SniffTaskResult {
  kind: 'sniff';
  result: SniffResult;
}

/** Make a WebP thumbnail of an image with sharp (src/previews/thumbnail-image.ts), in the preview process (not the pool). */
export interface ThumbnailTask {
  kind: 'thumbnail';
  /**
   * The image: its file on this machine (the fs driver) or its key in the preview process's own S3
   * store, which the preview process reads itself so that its bytes never pass through the
   * service's event loop; or the whole stored image (a file kept in the database).
   */
  source: { file: string } | { key: string } | { image: Uint8Array };
  /** Longest side of the thumbnail in pixels; smaller images are not enlarged. */
  maxSide: number;
  /** Images of more pixels than this are refused before they are decoded (decompression bombs). */
  maxPixels: number;
  /** WebP quality, 1 to 100. */
  quality: number;
}

export type ThumbnailTaskResult =
  | { kind: 'thumbnail'; outcome: 'made'; data: ArrayBuffer; width: number; height: number }
  /** sharp refused the image (not decodable, too many pixels): making it again would fail again. */
  | { kind: 'thumbnail'; outcome: 'undecodable'; reason: string }
  /** The source file is not there (deleted meanwhile, or lost from its store). */
  | { kind: 'thumbnail'; outcome: 'missing' };

/** Resize an image on request with sharp (src/previews/transform-image.ts). */
export interface TransformTask {
  kind: 'transform';
  /** The whole stored image, transferred. */
  image: ArrayBuffer;
  /** The transform as resolved for the image (resolveTransform); no side given: at most maxSide. */
  transform: Pick<ResolvedTransform, 'width' | 'height' | 'fit' | 'format' | 'quality'>;
  maxSide: number;
  /** Images of more pixels than this are refused before they are decoded (decompression bombs). */
  maxPixels: number;
}

export type TransformTaskResult =
  | { kind: 'transform'; outcome: 'made'; data: ArrayBuffer; width: number; height: number }
  /** More pixels than maxPixels, or not decodable: the same bytes fail the same way every time. */
  | { kind: 'transform'; outcome: 'too-large' | 'undecodable'; reason: string };

/** Remove an image's EXIF, XMP and IPTC, turning it upright first (src/uploads/metadata/strip-image.ts). */
export interface StripMetadataTask {
  kind: 'stripMetadata';
  /** The whole stored image, transferred. */
  image: ArrayBuffer;
  contentType: StrippableType;
  /** An image that must be turned upright and has more pixels than this is refused before it is decoded. */
  maxPixels: number;
}

export type StripMetadataTaskResult =
  /** The image has no metadata: it stays as it is. */
  | { kind: 'stripMetadata'; outcome: 'unchanged' }
  /** `data` is the image to store instead, `hash` its content hash; `reencoded` when its pixels were turned upright. */
  | { kind: 'stripMetadata'; outcome: 'stripped'; data: ArrayBuffer; hash: string; reencoded: boolean }
  /** The image cannot be read or stripped: the upload is refused. */
  | { kind: 'stripMetadata'; outcome: 'refused'; reason: string };

export type MediaTask = HashBlocksTask | SniffTask | TransformTask | StripMetadataTask;
export type MediaTaskResult = HashBlocksResult | SniffTaskResult | TransformTaskResult | StripMetadataTaskResult;

/** The result type that answers a given task type. */
export type MediaTaskResultFor<Task extends MediaTask> = Extract<MediaTaskResult, { kind: Task['kind'] }>;
