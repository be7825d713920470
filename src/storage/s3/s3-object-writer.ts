// The `s3` driver's object writer (S3ObjectStore.openWriter).
//
// Writing: the bytes are copied into part buffers of the writer's own (PartSink, part-sink.ts). A
// body that fits its first buffer (a screenshot of announced size fits exactly) goes out in one
// PutObject at finish(); a larger one as a multipart upload, created when its first part is full,
// with `queueSize` parts in flight at once and one more being filled. A part's buffer is filled
// again once S3 has answered it, and the store's writers hand free buffers on to each other (a
// whole body's buffer too, once its PutObject is answered).
//
// Memory per writer, worst case ≈ (queueSize + 2) × partSize: the parts in flight, the one being
// filled and a spare for what uWS delivers after a pause (part-sink.ts), plus the part of one
// write() that found no room. With the defaults (5 MiB parts, queueSize 1) that is 15 MiB for a
// large upload; a screenshot of declared size holds one buffer
// of about its size (its size class, part-sink.ts). Against the RGW on this machine 1, 2 and 4 parts in flight moved bytes at the same
// speed; a distant S3 with a long round trip per part wants more (S3_PARTS_IN_FLIGHT), at one
// part of memory each.
//
// Why not lib-storage's `Upload`: it concatenates the chunks it reads into a new buffer per part,
// after the stream in front of it has copied them once, so every byte of a large upload was
// allocated two or three times; collecting that memory took more of the main thread than any
// other step (docs/performance.md). Its `abort()` also only rejects done(): its
// AbortMultipartUpload is sent once every part uploader has stopped, which (measured on RGW) never
// happens while the body stream stays open, and its outcome is reported to no one.
//
// Clean-up: every request of a writer goes through #send, which adds the writer's abort signal,
// remembers the UploadId and whether the object may already exist, and knows which requests are
// still in flight. abort() and failures cancel the part uploads in flight, let a
// CreateMultipartUpload/Complete in flight finish (so its outcome is known), abort the multipart
// upload themselves, delete an object a PutObject/Complete may have written, and then list the
// key's multipart uploads until none is left, retrying for a few seconds.
import { setTimeout as sleep } from 'node:timers/promises';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import type {
  CompleteMultipartUploadCommandOutput,
  CompletedPart,
  CreateMultipartUploadCommandOutput,
  HeadObjectCommandOutput,
  PutObjectCommandOutput,
  UploadPartCommandOutput,
} from '@aws-sdk/client-s3';
import { StorageError } from '../object-store.ts';
import { StreamObjectWriter } from '../stream-object-writer.ts';
import { PartSink, type PartBufferPool } from './part-sink.ts';
import { changedNothing, isNotFound, wrap } from './s3-errors.ts';

/** How long abort() keeps checking that the key's multipart uploads are really gone. */
const SWEEP_DEADLINE_MS = 5_000;

type Command = PutObjectCommand | CreateMultipartUploadCommand | UploadPartCommand | CompleteMultipartUploadCommand | HeadObjectCommand;

/** Requests an abort lets finish, so that the clean-up knows their outcome (the UploadId; whether the object exists). */
function isCancellable(command: Command): boolean {
  return !(command instanceof CreateMultipartUploadCommand || command instanceof CompleteMultipartUploadCommand);
}

export interface StoreContext {
  client: S3Client;
  bucket: string;
}

export interface WriterOptions {
  context: StoreContext;
  key: string;
  objectKey: string;
  contentType: string;
  partSize: number;
  queueSize: number;
  /** Free part buffers shared by the store's writers. */
  partBuffers: PartBufferPool;
  /** The body's announced size, when it fits a part: the first buffer is made that size. */
  firstPartBytes?: number;
}

export class S3ObjectWriter extends StreamObjectWriter {
  readonly #context: StoreContext;
  readonly #options: WriterOptions;
  /** The S3 object key (with the store's prefix); `key` is the key as the caller knows it. */
  readonly #objectKey: string;
  readonly #sink: PartSink;
  readonly #controller = new AbortController();
  readonly #inFlight = new Set<Promise<void>>();
  /** The CreateMultipartUpload, sent with the first part. */
  #creating: Promise<string> | null = null;
  #uploadId: string | null = null;
  readonly #parts: CompletedPart[] = [];
  /** A CreateMultipartUpload got no definite answer (network error, cancelled): one may exist. */
  #createUncertain = false;
  /** A PutObject or CompleteMultipartUpload was sent: the object may exist. */
  #objectMayExist = false;

  constructor(options: WriterOptions) {
    // The sink is made before `this` exists; it sends a part only on a later write().
    let writer: S3ObjectWriter | null = null;
    const sink = new PartSink({
      partSize: options.partSize,
      partsInFlight: options.queueSize,
      pool: options.partBuffers,
      sendPart: (partNumber, body) => writer!.#uploadPart(partNumber, body),
      ...(options.firstPartBytes === undefined ? {} : { firstBufferSize: options.firstPartBytes }),
    });
    super(options.key, sink);
    writer = this;
    this.#context = options.context;
    this.#options = options;
    this.#objectKey = options.objectKey;
    this.#sink = sink;
  }

  readonly copiesChunks = true;

  takesWhileBehind(): boolean {
    return this.#sink.takesWhileBehind();
  }

  protected override wrapError(error: unknown, operation: string): StorageError {
    return wrap(error, operation, this.key);
  }

  async #uploadPart(partNumber: number, body: Buffer): Promise<void> {
    const { bucket } = this.#context;
    try {
      this.#creating ??= this.#send<CreateMultipartUploadCommandOutput>(
        new CreateMultipartUploadCommand({ Bucket: bucket, Key: this.#objectKey, ContentType: this.#options.contentType }),
      ).then((output) => {
        if (!output.UploadId) throw new Error('S3 answered CreateMultipartUpload without an UploadId');
        return output.UploadId;
      });
      const uploadId = await this.#creating;
      const output = await this.#send<UploadPartCommandOutput>(
        new UploadPartCommand({ Bucket: bucket, Key: this.#objectKey, UploadId: uploadId, PartNumber: partNumber, Body: body, ContentLength: body.length }),
      );
      if (!output.ETag) throw new Error(`S3 answered part ${partNumber} without an ETag`);
      this.#parts.push({ PartNumber: partNumber, ETag: output.ETag });
    } catch (error) {
      if (this.state === 'open') this.fail(error, 'write');
      throw error;
    }
  }

  /** Every request of this writer, sent with its abort signal and tracked for the clean-up. */
  #send<T>(command: Command): Promise<T> {
    // Once stopped, nothing new starts (a CreateMultipartUpload sent now would outlive the clean-up).
    if (this.#controller.signal.aborted) {
      return Promise.reject(Object.assign(new Error('The writer was stopped'), { name: 'AbortError' }));
    }
    const createsObject = command instanceof PutObjectCommand || command instanceof CompleteMultipartUploadCommand;
    if (createsObject) this.#objectMayExist = true;
    const request = this.#context.client.send(
      command as PutObjectCommand,
      isCancellable(command) ? { abortSignal: this.#controller.signal } : undefined,
    ) as unknown as Promise<T>;
    const tracked = request.then(
      (output) => {
        if (command instanceof CreateMultipartUploadCommand) this.#uploadId = (output as { UploadId?: string }).UploadId ?? null;
      },
      (error: unknown) => {
        if (command instanceof CreateMultipartUploadCommand && !changedNothing(error)) this.#createUncertain = true;
        // A refused PutObject/Complete wrote nothing (only one of them is ever sent per writer).
        if (createsObject && changedNothing(error)) this.#objectMayExist = false;
        // The SDK has already retried: the upload has failed.
        if (this.state === 'open' && !this.#controller.signal.aborted) this.fail(error, 'write');
      },
    );
    this.#inFlight.add(tracked);
    void tracked.then(() => this.#inFlight.delete(tracked));
    return request;
  }

  protected override async complete(): Promise<{ size: number; etag: string | null }> {
    const gathered = await this.#sink.end();
    this.throwIfAborted();
    const { bucket } = this.#context;
    if (gathered.kind === 'whole') {
      const { body } = gathered;
      const output = await this.#send<PutObjectCommandOutput>(
        new PutObjectCommand({ Bucket: bucket, Key: this.#objectKey, Body: body, ContentLength: body.length, ContentType: this.#options.contentType }),
      );
      this.throwIfAborted();
      this.#sink.release();
      return { size: this.bytesWritten, etag: output.ETag || null };
    }
    const parts = [...this.#parts].sort((a, b) => a.PartNumber! - b.PartNumber!);
    const output = await this.#send<CompleteMultipartUploadCommandOutput>(
      new CompleteMultipartUploadCommand({ Bucket: bucket, Key: this.#objectKey, UploadId: this.#uploadId!, MultipartUpload: { Parts: parts } }),
    );
    this.throwIfAborted();
    let etag = output.ETag || null;
    if (etag === null) {
      // RGW answers CompleteMultipartUpload without an ETag; HeadObject has it.
      const head = await this.#send<HeadObjectCommandOutput>(new HeadObjectCommand({ Bucket: bucket, Key: this.#objectKey }));
      if (head.ContentLength !== undefined && head.ContentLength !== this.bytesWritten) {
        throw new Error(`wrote ${this.bytesWritten} bytes but the object holds ${head.ContentLength}`);
      }
      etag = head.ETag || null;
    }
    return { size: this.bytesWritten, etag };
  }

  protected override stop(): void {
    // Cancels the parts and the PutObject in flight; nothing new is sent.
    this.#controller.abort();
    this.#sink.stop(Object.assign(new Error('The writer was stopped'), { name: 'AbortError' }));
  }

  protected override async cleanUp(): Promise<void> {
    // Requests in flight were cancelled; let them settle so none lands after the checks below.
    while (this.#inFlight.size > 0) await Promise.all(this.#inFlight);
    const { client, bucket } = this.#context;
    if (this.#uploadId !== null) await abortMultipartUpload(client, bucket, this.#objectKey, this.#uploadId);
    if (this.#objectMayExist) await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: this.#objectKey }));
    if (this.#uploadId !== null || this.#createUncertain) await this.#sweepKey();
  }

  /** Aborts whatever multipart upload is still listed for the key, until none is. */
  async #sweepKey(): Promise<void> {
    const { client, bucket } = this.#context;
    const deadline = Date.now() + SWEEP_DEADLINE_MS;
    for (let delay = 50; ; delay = Math.min(delay * 2, 1_000)) {
      const page = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: this.#objectKey }));
      const left = (page.Uploads ?? []).filter((upload) => upload.Key === this.#objectKey && upload.UploadId);
      if (left.length === 0) return;
      for (const upload of left) await abortMultipartUpload(client, bucket, this.#objectKey, upload.UploadId!);
      if (Date.now() + delay > deadline) {
        throw new StorageError(`Multipart uploads of ${this.key} are still listed after aborting them`, {
          code: 'unavailable',
          operation: 'abort',
          key: this.key,
        });
      }
      await sleep(delay);
    }
  }
}

/** AbortMultipartUpload; an upload that is already gone is fine. */
export async function abortMultipartUpload(client: S3Client, bucket: string, objectKey: string, uploadId: string): Promise<void> {
  try {
    await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: objectKey, UploadId: uploadId }));
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}
