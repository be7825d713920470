export { MediaClient } from './client.ts';
export type {
  BulkRequest, BulkResult, Folder, FolderCreate, FolderDeletion, FolderList, FolderUpdate, JsonUpload, JsonUploadOptions, ListMediaQuery, ListTagsQuery,
  MediaClientOptions, MediaDeletion, MediaFile, MediaLink, MediaList, MediaUpdate, TagList, UploadedMediaFile, UploadOptions, UploadQuery, UploadSource, UploadUrl,
  UploadUrlRequest, Usage, UsageQuery,
} from './client.ts';
export { uploadToUrl } from './upload-urls.ts';
export type { UploadToUrlOptions } from './upload-urls.ts';
export { resumableUpload } from './resumable.ts';
export type { ResumableTarget, ResumableUploadOptions, ResumableUploadResult } from './resumable.ts';
export { MediaApiError, MediaConnectionError } from './errors.ts';
export type { ErrorBody } from './errors.ts';
export type { RetryOptions, StreamedResponse } from './transport.ts';
export type { components, operations, paths } from './generated/openapi.ts';
