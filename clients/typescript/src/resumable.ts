import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { Upload as TusUpload } from 'tus-js-client';
import { errorBodyOf, MediaApiError, MediaConnectionError } from './errors.ts';

/** Where a resumable upload goes: the service, the team and its key. */
export interface ResumableTarget {
  baseUrl: string;
  teamId: string;
  apiKey: string;
}

export interface ResumableUploadOptions {
  /** The stored file name (Upload-Metadata `filename`). */
  fileName: string;
  /** The declared type (`filetype`); the service sniffs the content anyway. */
  fileType?: string;
  folder?: string;
  folderId?: string;
  tags?: string[] | string;
  public?: boolean;
  /** Resume this upload (the URL an earlier attempt gave to onUploadUrl) instead of creating one. */
  uploadUrl?: string;
  /** Called once the upload URL is known: keep it to resume after the process itself restarts. */
  onUploadUrl?: (url: string) => void;
  /** Bytes stored by the service so far and the total. */
  onProgress?: (sent: number, total: number) => void;
  /** Bytes per PATCH request (default: the whole rest of the file in one). */
  chunkSize?: number;
  /** Waits before each retry of a broken request; the client resumes from the service's offset (default: 0.5, 1, 2, 4, 8, 16 s). */
  retryDelays?: number[];
  /**
   * The creation's Idempotency-Key; a random UUID otherwise. A creation retried after a lost answer
   * gets the same upload (Location) back instead of making a second one.
   */
  idempotencyKey?: string;
  /** Aborts the upload (it stays resumable until it expires). */
  signal?: AbortSignal;
}

export interface ResumableUploadResult {
  /** The media file the upload became. */
  mediaId: string;
  uploadUrl: string;
}

const DEFAULT_RETRY_DELAYS = [500, 1000, 2000, 4000, 8000, 16000];

/**
 * Uploads a file path or bytes with tus 1.0.0 (tus-js-client), resuming after broken connections
 * from the offset the service kept. For large files on unreliable links; `upload` is simpler for the rest.
 */
export async function resumableUpload(target: ResumableTarget, source: string | Uint8Array, options: ResumableUploadOptions): Promise<ResumableUploadResult> {
  // Loaded on first use: clients that never upload resumably (and the CLI) do not pay for it.
  const { Upload } = await import('tus-js-client');
  const metadata: Record<string, string> = { filename: options.fileName };
  if (options.fileType !== undefined) metadata['filetype'] = options.fileType;
  if (options.folder !== undefined) metadata['folder'] = options.folder;
  if (options.folderId !== undefined) metadata['folderId'] = options.folderId;
  if (options.tags !== undefined) metadata['tags'] = Array.isArray(options.tags) ? options.tags.join(',') : options.tags;
  if (options.public !== undefined) metadata['public'] = String(options.public);
  const file = typeof source === 'string' ? createReadStream(source) : Buffer.from(source.buffer, source.byteOffset, source.byteLength);
  return new Promise((resolve, reject) => {
    let announced = false;
    const upload: TusUpload = new Upload(file, {
      endpoint: `${target.baseUrl.replace(/\/+$/, '')}/v1/cdn/media/${encodeURIComponent(target.teamId)}/tus`,
      // On every request; the service reads Idempotency-Key on the creation (POST) only.
      headers: { Authorization: `Bearer ${target.apiKey}`, 'Idempotency-Key': options.idempotencyKey ?? randomUUID() },
      metadata,
      retryDelays: options.retryDelays ?? DEFAULT_RETRY_DELAYS,
      ...(options.uploadUrl !== undefined && { uploadUrl: options.uploadUrl }),
      ...(options.chunkSize !== undefined && { chunkSize: options.chunkSize }),
      onUploadUrlAvailable: () => {
        if (!announced && upload.url) {
          announced = true;
          options.onUploadUrl?.(upload.url);
        }
      },
      onProgress: (sent, total) => options.onProgress?.(sent, total),
      onSuccess: ({ lastResponse }) => {
        const mediaId = lastResponse.getHeader('Media-Id');
        if (mediaId) resolve({ mediaId, uploadUrl: upload.url! });
        else reject(new MediaConnectionError('The upload finished without a Media-Id', {}));
      },
      onError: (error) => reject(toClientError(error)),
    });
    options.signal?.addEventListener('abort', () => {
      void upload.abort().then(() => reject(new MediaConnectionError('The upload was aborted; it can be resumed with its upload URL', { code: 'ABORTED' })));
    }, { once: true });
    upload.start();
  });
}

/** An error answer of the service as MediaApiError (the spec's body); anything else as MediaConnectionError. */
function toClientError(error: Error): Error {
  const response = (error as { originalResponse?: { getStatus(): number; getBody(): string; getHeader(name: string): string | undefined } | null }).originalResponse;
  if (response) return new MediaApiError(errorBodyOf(response.getStatus(), response.getBody()), response.getHeader('X-Request-Id'));
  return new MediaConnectionError(error.message, { cause: error });
}
