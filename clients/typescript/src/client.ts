import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { Readable } from 'node:stream';
import { errorBodyOf, MediaApiError } from './errors.ts';
import type { components, operations } from './generated/openapi.ts';
import { multipartFile } from './multipart.ts';
import { resumableUpload, type ResumableUploadOptions, type ResumableUploadResult } from './resumable.ts';
import { header, retryAfterSeconds, Transport, type RequestBody, type RetryOptions, type StreamedResponse, type TransportRequest } from './transport.ts';

type Schemas = components['schemas'];
export type MediaFile = Schemas['MediaFile'];
export type UploadedMediaFile = Schemas['UploadedMediaFile'];
export type MediaList = Schemas['MediaList'];
export type MediaLink = Schemas['MediaLink'];
export type MediaDeletion = Schemas['MediaDeletion'];
export type MediaUpdate = Schemas['MediaUpdateRequest'];
export type BulkRequest = Schemas['BulkRequest'];
export type BulkResult = Schemas['BulkResult'];
export type Folder = Schemas['Folder'];
export type FolderList = Schemas['FolderList'];
export type FolderCreate = Schemas['FolderCreateRequest'];
export type FolderUpdate = Schemas['FolderUpdateRequest'];
export type FolderDeletion = Schemas['FolderDeletion'];
export type TagList = Schemas['TagList'];
export type Usage = Schemas['Usage'];
export type JsonUpload = Schemas['JsonUploadRequest'];
export type UploadUrl = Schemas['UploadUrl'];
export type UploadUrlRequest = Schemas['UploadUrlCreateRequest'];

type QueryOf<Name extends keyof operations> = operations[Name]['parameters'] extends { query?: infer Query } ? NonNullable<Query> : never;
type HeadersOf<Name extends keyof operations> = operations[Name]['parameters'] extends { header?: infer Headers } ? NonNullable<Headers> : never;

/** Upload options of the multipart route (query parameters). */
export type UploadQuery = QueryOf<'uploadMediaMultipart'>;
export type ListMediaQuery = QueryOf<'listMedia'> & HeadersOf<'listMedia'>;
export type ListTagsQuery = QueryOf<'listTags'>;
export type UsageQuery = QueryOf<'getUsage'>;

/**
 * What to upload: a file path (streamed, retried freely), a buffer, or a stream (not read into memory;
 * retried only while none of it was read, so give its `size` for an early refusal by length).
 */
export type UploadSource =
  | string
  | Uint8Array
  | { stream: Readable | AsyncIterable<Uint8Array>; size?: number };

export interface UploadOptions extends UploadQuery {
  /** Required for buffers and streams; a path's base name otherwise. Sent as the part's filename. */
  name?: string;
  /** The part's Content-Type (the service sniffs the content anyway). */
  contentType?: string;
  /** Bytes of the request written so far and its length (when known); from 0 again on a retry. */
  onProgress?: (sent: number, total: number | undefined) => void;
  /** The upload's Idempotency-Key; a random UUID otherwise. Every retry of this upload sends the same one. */
  idempotencyKey?: string;
}

export interface JsonUploadOptions {
  /** The content: bytes, or a data URI / base64 string as the route takes it. */
  content: Uint8Array | string;
  fileName: string;
  public?: boolean;
  folder?: string;
  folderId?: string;
  tags?: string[] | string;
  idempotencyKey?: string;
}

export interface MediaClientOptions {
  /** The service, e.g. https://media.example.com */
  baseUrl: string;
  teamId: string;
  /** A team API key (tws_...). */
  apiKey: string;
  retry?: RetryOptions;
  /** Per attempt: no traffic for this long ends it (default 120 s). */
  timeoutMs?: number;
  /** Sent as User-Agent. */
  userAgent?: string;
}

/** A typed client of the media routes of one team. Every method throws MediaApiError for an error answer. */
export class MediaClient {
  readonly teamId: string;
  readonly #transport: Transport;
  readonly #options: MediaClientOptions;

  constructor(options: MediaClientOptions) {
    this.teamId = options.teamId;
    this.#options = options;
    this.#transport = new Transport({
      baseUrl: options.baseUrl,
      headers: { authorization: `Bearer ${options.apiKey}`, 'user-agent': options.userAgent ?? '@media-upload/client' },
      ...(options.retry && { retry: options.retry }),
      ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
    });
  }

  get #base(): string {
    return `/v1/cdn/media/${encodeURIComponent(this.teamId)}`;
  }

  /** POST .../upload/file: multipart, streamed from the source; a 503 uploadBusy or 429 is retried after Retry-After. */
  /**
   * A resumable (tus) upload of a file path or bytes: broken connections are resumed from the
   * offset the service kept (resumable.ts). Answers the media file's id.
   */
  resumableUpload(source: string | Uint8Array, options: ResumableUploadOptions): Promise<ResumableUploadResult> {
    return resumableUpload({ baseUrl: this.#options.baseUrl, teamId: this.teamId, apiKey: this.#options.apiKey }, source, options);
  }

  async upload(source: UploadSource, options: UploadOptions = {}): Promise<UploadedMediaFile> {
    const { name, contentType, onProgress, idempotencyKey, ...query } = options;
    const fileName = name ?? (typeof source === 'string' ? basename(source) : undefined);
    if (!fileName) throw new TypeError('upload: options.name is required for a buffer or a stream');
    const body = await uploadBody(source, fileName, contentType);
    return this.#json<UploadedMediaFile>({
      method: 'POST',
      path: `${this.#base}/upload/file`,
      // The exact name as an option; the part's filename is only its ASCII stand-in.
      query: { fileName, ...query },
      headers: { 'idempotency-key': idempotencyKey ?? randomUUID() },
      body,
      idempotent: true,
      ...(onProgress && { onProgress }),
    });
  }

  /** POST .../upload: a small file as JSON (base64). Private unless `public: true`. */
  async uploadJson(options: JsonUploadOptions): Promise<UploadedMediaFile> {
    const { content, idempotencyKey, ...rest } = options;
    const file = typeof content === 'string' ? content : Buffer.from(content).toString('base64');
    const request: JsonUpload = { ...rest, file };
    return this.#json<UploadedMediaFile>({
      method: 'POST',
      path: `${this.#base}/upload`,
      headers: { 'idempotency-key': idempotencyKey ?? randomUUID() },
      body: jsonBody(request),
      idempotent: true,
    });
  }

  /** GET the team's files, newest first; pageNumber and pageSize go as the headers the route reads. */
  listMedia(query: ListMediaQuery = {}): Promise<MediaList> {
    const { pageNumber, pageSize, ...filters } = query;
    const headers: Record<string, string> = {};
    if (pageNumber !== undefined) headers.pageNumber = String(pageNumber);
    if (pageSize !== undefined) headers.pageSize = String(pageSize);
    return this.#json({ method: 'GET', path: this.#base, query: filters, headers, idempotent: true });
  }

  /** The public link of a public file, or a link signed for one hour for a private one. */
  getMediaLink(mediaId: string): Promise<MediaLink> {
    return this.#json({ method: 'GET', path: `${this.#base}/${encodeURIComponent(mediaId)}`, idempotent: true });
  }

  updateMedia(mediaId: string, update: MediaUpdate): Promise<MediaFile> {
    return this.#json({ method: 'PATCH', path: `${this.#base}/update/${encodeURIComponent(mediaId)}`, body: jsonBody(update), idempotent: false });
  }

  deleteMedia(mediaId: string): Promise<MediaDeletion> {
    return this.#json({ method: 'DELETE', path: `${this.#base}/delete/${encodeURIComponent(mediaId)}`, idempotent: true });
  }

  bulk(request: BulkRequest): Promise<BulkResult> {
    return this.#json({ method: 'POST', path: `${this.#base}/bulk`, body: jsonBody(request), idempotent: false });
  }

  listFolders(): Promise<FolderList> {
    return this.#json({ method: 'GET', path: `${this.#base}/folders`, idempotent: true });
  }

  createFolder(folder: FolderCreate): Promise<Folder> {
    return this.#json({ method: 'POST', path: `${this.#base}/folders`, body: jsonBody(folder), idempotent: false });
  }

  updateFolder(folderId: string, update: FolderUpdate): Promise<Folder> {
    return this.#json({ method: 'PATCH', path: `${this.#base}/folders/${encodeURIComponent(folderId)}`, body: jsonBody(update), idempotent: false });
  }

  deleteFolder(folderId: string): Promise<FolderDeletion> {
    return this.#json({ method: 'DELETE', path: `${this.#base}/folders/${encodeURIComponent(folderId)}`, idempotent: true });
  }

  listTags(query: ListTagsQuery = {}): Promise<TagList> {
    return this.#json({ method: 'GET', path: `${this.#base}/tags`, query, idempotent: true });
  }

  getUsage(query: UsageQuery = {}): Promise<Usage> {
    return this.#json({ method: 'GET', path: `${this.#base}/usage`, query, idempotent: true });
  }

  /**
   * POST .../upload-urls: a URL anyone may upload one file to, without a key (see uploadToUrl), under the options given here.
   * Sent with an Idempotency-Key (`idempotencyKey`, a random UUID otherwise), so a retry after a lost answer gets the same URL.
   */
  createUploadUrl(request: UploadUrlRequest = {}, options: { idempotencyKey?: string } = {}): Promise<UploadUrl> {
    return this.#json({
      method: 'POST',
      path: `${this.#base}/upload-urls`,
      headers: { 'idempotency-key': options.idempotencyKey ?? randomUUID() },
      body: jsonBody(request),
      idempotent: true,
    });
  }

  /**
   * GET /media/team/<teamId>/<file>: the file itself as a stream (`file` is the id or id.ext of its path;
   * a private file needs the expires and signature of its signed link). 2xx and 304 answer; others throw.
   */
  async getFile(file: string, options: { expires?: string; signature?: string; range?: string } = {}): Promise<StreamedResponse> {
    const response = await this.#transport.sendStreamed({
      method: 'GET',
      path: `/media/team/${encodeURIComponent(this.teamId)}/${encodeURIComponent(file)}`,
      query: { expires: options.expires, signature: options.signature },
      headers: options.range ? { range: options.range } : {},
      idempotent: true,
    });
    if (response.status >= 400) {
      const chunks: Buffer[] = [];
      for await (const chunk of response.body) chunks.push(chunk as Buffer);
      throw apiError(response.status, Buffer.concat(chunks).toString('utf8'), response.headers);
    }
    return response;
  }

  async #json<T>(request: TransportRequest): Promise<T> {
    const response = await this.#transport.send(request);
    if (response.status >= 400) throw apiError(response.status, response.text, response.headers);
    return JSON.parse(response.text) as T;
  }
}

export function apiError(status: number, text: string, headers: Record<string, string | string[] | undefined>): MediaApiError {
  const retryAfter = headers['retry-after'];
  return new MediaApiError(errorBodyOf(status, text), header(headers, 'x-request-id'), retryAfterSeconds(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter));
}

function jsonBody(value: unknown): RequestBody {
  return { kind: 'buffer', contentType: 'application/json', data: Buffer.from(JSON.stringify(value)) };
}

export async function uploadBody(source: UploadSource, name: string, contentType: string | undefined): Promise<RequestBody> {
  if (typeof source === 'string') {
    const { size } = await stat(source);
    const probe = multipartFile(emptyIterable(), name, size, contentType);
    return {
      kind: 'stream',
      contentType: probe.contentType,
      length: probe.length,
      rewindable: true,
      // A fresh read of the file for each attempt; the framing is made again with a new boundary of the same length.
      open: () => framedWithBoundary(probe.contentType, createReadStream(source), name, size, contentType),
    };
  }
  if (source instanceof Uint8Array) {
    const content = Buffer.from(source.buffer, source.byteOffset, source.byteLength);
    const probe = multipartFile(emptyIterable(), name, content.length, contentType);
    return {
      kind: 'stream',
      contentType: probe.contentType,
      length: probe.length,
      rewindable: true,
      open: () => framedWithBoundary(probe.contentType, [content], name, content.length, contentType),
    };
  }
  const probe = multipartFile(emptyIterable(), name, source.size, contentType);
  let opened = false;
  return {
    kind: 'stream',
    contentType: probe.contentType,
    length: probe.length,
    rewindable: false,
    open: () => {
      if (opened) throw new Error('a stream source can be sent once');
      opened = true;
      return framedWithBoundary(probe.contentType, source.stream, name, source.size, contentType);
    },
  };
}

async function* emptyIterable(): AsyncGenerator<Uint8Array> {}

/** The multipart stream of `file` framed with the boundary already announced in `formContentType`. */
function framedWithBoundary(formContentType: string, file: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, fileName: string, size: number | undefined, contentType: string | undefined): Readable {
  const boundary = formContentType.slice(formContentType.indexOf('boundary=') + 'boundary='.length);
  const iterable: AsyncIterable<Uint8Array> = Symbol.asyncIterator in file ? file : Readable.from(file);
  return multipartFile(iterable, fileName, size, contentType, boundary).stream;
}
