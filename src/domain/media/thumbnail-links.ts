/**
 * Where a media file's thumbnail is stored and served. Both derive from the ids only: the storage
 * key sits beside the media keys under its own prefix, and the link beside the file's link.
 */
export function thumbnailStorageKey(teamId: string, mediaId: string): string {
  return `thumbnails/${teamId}/${mediaId}.webp`;
}

/** The thumbnail key of a media file's storage key (`media/<teamId>/<mediaId>`, media-upload-target.ts); null for other keys. */
export function thumbnailKeyOfMediaKey(storageKey: string): string | null {
  const match = /^media\/([^/]+)\/([^/]+)$/.exec(storageKey);
  return match ? thumbnailStorageKey(match[1]!, match[2]!) : null;
}

export function thumbnailPath(teamId: string, mediaId: string): string {
  return `media/team/${teamId}/thumbnails/${mediaId}.webp`;
}

export const THUMBNAIL_CONTENT_TYPE = 'image/webp';

/** The sniffed types that get a thumbnail: the types the trigger of Migration20261128020500VideoPosters queues. */
export const THUMBNAIL_SOURCE_TYPES: ReadonlySet<string> = new Set([
  'image/png', 'image/jpeg', 'image/webp', 'image/gif', 'image/avif', 'video/mp4', 'video/webm', 'video/x-matroska', 'video/quicktime',
]);
