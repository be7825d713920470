// Resumable uploads on the s3 driver. Each upload is one multipart upload of its final key, begun
// at creation. Bytes are cut into parts of exactly `partSize` (at least S3's 5 MiB minimum) in the
// order they arrive; what is left over when a request ends, less than a part, is kept as a small
// object of its own, the tail (`<prefix>tus/<uploadId>.part`), and read back to be continued by the
// next request, on whichever instance it lands. This is how @tus/s3-store keeps its "incomplete
// part"; here the database row, not an info object, says how many parts and tail bytes count.
//
// Consistency with the row (which is written after each part and at the end of each request): a
// part uploaded but not recorded is uploaded again under the same number by the next request; the
// tail object's first `tailBytes` bytes never change while the part count stays the same (a new
// tail is the old one plus newer bytes), and a recorded new part resets `tailBytes` to 0. So a
// crash at any point leaves storage that agrees with the row.
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { StorageError, assertValidKey } from '../object-store.ts';
import type { ResumableAppend, ResumableProgress, ResumableStore, ResumableUpload } from '../resumable-store.ts';

export interface S3ResumableStoreOptions {
  client: S3Client;
  bucket: string;
  keyPrefix: string;
  partSize: number;
  /** The driver's error wrapping (codes for retryable failures). */
  wrap: (error: unknown, operation: string, key: string | null) => StorageError;
  isNotFound: (error: unknown) => boolean;
}

export class S3ResumableStore implements ResumableStore {
  readonly #options: S3ResumableStoreOptions;

  constructor(options: S3ResumableStoreOptions) {
    this.#options = options;
  }

  #objectKey(key: string, operation: string): string {
    assertValidKey(key, operation);
    return this.#options.keyPrefix + key;
  }

  #tailKey(id: string): string {
    if (!/^[0-9a-f-]{36}$/.test(id)) throw new StorageError(`Invalid upload id ${JSON.stringify(id)}`, { code: 'invalid-key', operation: 'tus' });
    return `${this.#options.keyPrefix}tus/${id}.part`;
  }

  async #send<T>(operation: string, key: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw this.#options.wrap(error, operation, key);
    }
  }

  async begin(upload: { id: string; key: string }): Promise<ResumableProgress> {
    const { client, bucket } = this.#options;
    const objectKey = this.#objectKey(upload.key, 'begin');
    const created = await this.#send('begin', upload.key, () =>
      client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: objectKey, ContentType: 'application/octet-stream' })),
    );
    if (!created.UploadId) throw new StorageError('S3 answered no UploadId', { code: 'failed', operation: 'begin', key: upload.key });
    return { offset: 0, multipartId: created.UploadId, partCount: 0, tailBytes: 0 };
  }

  async #readTail(upload: ResumableUpload): Promise<Buffer> {
    const { client, bucket } = this.#options;
    const output = await this.#send('append', upload.key, () =>
      client.send(new GetObjectCommand({ Bucket: bucket, Key: this.#tailKey(upload.id), Range: `bytes=0-${upload.tailBytes - 1}` })),
    );
    const bytes = Buffer.from(await this.#send('append', upload.key, () => output.Body!.transformToByteArray()));
    if (bytes.length !== upload.tailBytes) {
      throw new StorageError(`The tail of upload ${upload.id} has ${bytes.length} bytes, not ${upload.tailBytes}`, { code: 'failed', operation: 'append', key: upload.key });
    }
    return bytes;
  }

  async #uploadPart(upload: ResumableUpload, partNumber: number, body: Buffer): Promise<void> {
    const { client, bucket } = this.#options;
    await this.#send('append', upload.key, () =>
      client.send(new UploadPartCommand({
        Bucket: bucket, Key: this.#objectKey(upload.key, 'append'), UploadId: upload.multipartId!, PartNumber: partNumber, Body: body, ContentLength: body.length,
      })),
    );
  }

  async append(upload: ResumableUpload, onProgress: (progress: ResumableProgress) => Promise<void>): Promise<ResumableAppend> {
    const { client, bucket, partSize } = this.#options;
    let pending: Buffer[] = upload.tailBytes > 0 ? [await this.#readTail(upload)] : [];
    let pendingBytes = upload.tailBytes;
    let partCount = upload.partCount;
    let offset = upload.offset;
    return {
      write: async (chunk) => {
        pending.push(chunk);
        pendingBytes += chunk.length;
        offset += chunk.length;
        while (pendingBytes >= partSize) {
          const all = pending.length === 1 ? pending[0]! : Buffer.concat(pending);
          await this.#uploadPart(upload, partCount + 1, all.subarray(0, partSize));
          partCount++;
          const rest = all.subarray(partSize);
          pending = rest.length > 0 ? [rest] : [];
          pendingBytes = rest.length;
          await onProgress({ offset: offset - pendingBytes, multipartId: upload.multipartId, partCount, tailBytes: 0 });
        }
      },
      settle: async () => {
        if (pendingBytes > 0) {
          const tail = Buffer.concat(pending);
          await this.#send('append', upload.key, () =>
            client.send(new PutObjectCommand({ Bucket: bucket, Key: this.#tailKey(upload.id), Body: tail, ContentLength: tail.length })),
          );
        }
        return { offset, multipartId: upload.multipartId, partCount, tailBytes: pendingBytes };
      },
      abandon: async () => {
        pending = [];
      },
    };
  }

  async complete(upload: ResumableUpload): Promise<void> {
    const { client, bucket } = this.#options;
    const objectKey = this.#objectKey(upload.key, 'complete');
    if (upload.offset === 0) {
      // S3 completes no multipart upload without parts: an empty file is one PutObject.
      await this.#send('complete', upload.key, () => client.send(new PutObjectCommand({ Bucket: bucket, Key: objectKey, Body: Buffer.alloc(0) })));
      await this.discard(upload);
      return;
    }
    let lastPart = upload.partCount;
    if (upload.tailBytes > 0) {
      lastPart++;
      await this.#uploadPart(upload, lastPart, await this.#readTail(upload));
    }
    const parts: { ETag: string; PartNumber: number }[] = [];
    let marker: string | undefined;
    for (;;) {
      const page = await this.#send('complete', upload.key, () =>
        client.send(new ListPartsCommand({ Bucket: bucket, Key: objectKey, UploadId: upload.multipartId!, ...(marker ? { PartNumberMarker: marker } : {}) })),
      );
      for (const part of page.Parts ?? []) {
        // A part beyond the last is a leftover of a request whose progress was never recorded.
        if (part.PartNumber !== undefined && part.ETag && part.PartNumber <= lastPart) parts.push({ ETag: part.ETag, PartNumber: part.PartNumber });
      }
      if (!page.IsTruncated || !page.NextPartNumberMarker) break;
      marker = page.NextPartNumberMarker;
    }
    parts.sort((a, b) => a.PartNumber - b.PartNumber);
    if (parts.length !== lastPart) {
      throw new StorageError(`Upload ${upload.id} has ${parts.length} of its ${lastPart} parts`, { code: 'failed', operation: 'complete', key: upload.key });
    }
    await this.#send('complete', upload.key, () =>
      client.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: objectKey, UploadId: upload.multipartId!, MultipartUpload: { Parts: parts } })),
    );
    await this.#removeTail(upload);
  }

  async #removeTail(upload: ResumableUpload): Promise<void> {
    const { client, bucket } = this.#options;
    await this.#send('discard', upload.key, () => client.send(new DeleteObjectCommand({ Bucket: bucket, Key: this.#tailKey(upload.id) })));
  }

  async discard(upload: ResumableUpload): Promise<void> {
    const { client, bucket, isNotFound } = this.#options;
    if (upload.multipartId) {
      const objectKey = this.#objectKey(upload.key, 'discard');
      try {
        await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: objectKey, UploadId: upload.multipartId }));
      } catch (error) {
        if (!isNotFound(error)) throw this.#options.wrap(error, 'discard', upload.key);
      }
    }
    await this.#removeTail(upload);
  }
}
