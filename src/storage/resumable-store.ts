// The storage seam of resumable (tus) uploads: bytes arrive over many requests, possibly on
// different instances, and the database row (src/uploads/tus/tus-upload.repository.ts) records how far they got. A driver
// keeps its bytes so that whatever the row says is stored really is, and bytes beyond it are
// ignored or overwritten by the next append.

/** What the database knows about an upload's stored bytes. */
export interface ResumableProgress {
  /** Bytes stored, counted from the start of the file. */
  offset: number;
  /** s3: the multipart upload; fs: null. */
  multipartId: string | null;
  /** s3: parts uploaded (all bytes before the tail); fs: 0. */
  partCount: number;
  /** s3: bytes kept in the tail object (fewer than a part), the last `tailBytes` of `offset`; fs: 0. */
  tailBytes: number;
}

export interface ResumableUpload extends ResumableProgress {
  /** The upload's id (names its temp file or tail object). */
  id: string;
  /** Where the finished object goes (`media/<teamId>/<mediaId>`). */
  key: string;
}

/** One request's worth of appended bytes. */
export interface ResumableAppend {
  /** Stores (or buffers) a chunk; resolves when the next may be written. */
  write(chunk: Buffer): Promise<void>;
  /** Makes every byte written so far durable and answers the progress to record. Call once, last. */
  settle(): Promise<ResumableProgress>;
  /** Stops without making the last bytes durable (the upload is being removed). */
  abandon(): Promise<void>;
}

export interface ResumableStore {
  /** Prepares an upload's storage (an empty temp file, a multipart upload). */
  begin(upload: { id: string; key: string }): Promise<ResumableProgress>;
  /**
   * Appends after `upload.offset`. `onProgress` is called with progress that became durable while
   * writing (s3: after each part), so a crash mid-request loses at most the bytes since then.
   */
  append(upload: ResumableUpload, onProgress: (progress: ResumableProgress) => Promise<void>): Promise<ResumableAppend>;
  /** All `upload.offset` bytes become the object under `upload.key`; the temporary storage goes. */
  complete(upload: ResumableUpload): Promise<void>;
  /** Removes everything of an unfinished upload; idempotent. */
  discard(upload: ResumableUpload): Promise<void>;
}
