import { randomUUID } from 'node:crypto';
import { basename } from 'node:path';
import { apiError, uploadBody, type UploadSource, type UploadedMediaFile, type UploadUrl } from './client.ts';
import { Transport, type RetryOptions } from './transport.ts';

export interface UploadToUrlOptions {
  /** The file's name (a path's base name otherwise); used only when the URL fixes none. */
  name?: string;
  /** The part's Content-Type; checked against the URL's contentTypes (the service sniffs the content anyway). */
  contentType?: string;
  /** Bytes of the request written so far and its length (when known). */
  onProgress?: (sent: number, total: number | undefined) => void;
  /**
   * The use's Idempotency-Key; a random UUID otherwise. Every retry of this upload sends the same one, so a retry
   * after a lost answer gets the first answer again instead of 410 used.
   */
  idempotencyKey?: string;
  /** Connection failures, 429, 503 and 409 idempotencyInFlight are retried (after Retry-After where given). */
  retry?: RetryOptions;
  timeoutMs?: number;
  userAgent?: string;
}

/**
 * Uploads one file to an upload URL (MediaClient.createUploadUrl's `url`), without any key: the
 * URL is the permission. Multipart, streamed from the source. A URL works once; every attempt
 * carries the same Idempotency-Key, so a retry after a connection failure (the file may have
 * landed) is answered with the first attempt's file rather than 410 used.
 */
export async function uploadToUrl(url: string | UploadUrl, source: UploadSource, options: UploadToUrlOptions = {}): Promise<UploadedMediaFile> {
  const target = new URL(typeof url === 'string' ? url : url.url);
  const fileName = options.name ?? (typeof source === 'string' ? basename(source) : 'file');
  const transport = new Transport({
    baseUrl: target.origin,
    headers: { 'user-agent': options.userAgent ?? '@media-upload/client' },
    ...(options.retry && { retry: options.retry }),
    ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
  });
  const response = await transport.send({
    method: 'POST',
    path: target.pathname,
    query: Object.fromEntries(target.searchParams),
    headers: { 'idempotency-key': options.idempotencyKey ?? randomUUID() },
    body: await uploadBody(source, fileName, options.contentType),
    idempotent: true,
    ...(options.onProgress && { onProgress: options.onProgress }),
  });
  if (response.status >= 400) throw apiError(response.status, response.text, response.headers);
  return JSON.parse(response.text) as UploadedMediaFile;
}
