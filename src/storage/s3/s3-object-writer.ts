// The `s3` driver's object writer (S3ObjectStore.openWriter).
//
// Writing: a writer whose object is announced to fit one part (`expectedSize`, a screenshot's
// Content-Length) keeps the caller's chunks and sends them in one PutObject at finish(); the
// stream below cost a 2 MiB upload 1-3 ms more of CPU (its reads concatenating,
// lib-storage's gathering copy, the garbage of both: docs/performance.md). Any other writer, and one
// whose body outgrows a part after all, feeds a PassThrough that lib-storage's `Upload` reads: up
// to one part's worth of bytes becomes a single PutObject, anything larger a multipart upload with
// `queueSize` parts in flight at once.
//
// Memory per writer, worst case ≈ (queueSize + 2) × partSize + 2 × highWaterMark:
// every part in flight holds its buffer (queueSize), one more part is being gathered, and
// lib-storage briefly holds one more while it concatenates the gathered chunks into a part (the
// leftover after a cut also keeps the previous part's buffer alive until the next cut); the
// PassThrough holds up to highWaterMark on each of its two sides before write() returns false.
// With the defaults (5 MiB parts, queueSize 1, 1 MiB highWaterMark) that is about 17 MiB for a
// large upload; a 2 MB screenshot of declared size holds its chunks, and while its PutObject is
// sent one concatenated copy of them. Dead part buffers are external memory that V8 frees only
// at its next full GC (up to ~64 MiB later),
// so RSS rises by more than the live bytes: a 250 MB upload from a loopback client raised RSS by
// 33-36 MB with these defaults, 59-68 MB with 5 MiB x 2 and 67-98 MB with 8 MiB x 2 (RGW on the
// same machine; the 64 MB budget is in docs/performance.md). Against that local RGW 1, 2 and 4
// parts in flight moved bytes at the same speed; a distant S3 with a long round trip per part
// wants more (S3_PARTS_IN_FLIGHT), at one part of memory each.
//
// Clean-up: every request of a writer goes through a per-writer wrapper of the client that adds
// the writer's abort signal, remembers the UploadId and whether the object may already exist, and
// knows which requests are still in flight. abort() and failures cancel the part uploads in
// flight, let a CreateMultipartUpload/Complete in flight finish (so its outcome is known), abort
// the multipart upload themselves, delete an object a PutObject/Complete may have written, and
// then list the key's multipart uploads until none is left, retrying for a few seconds.
// Why not rely on lib-storage: `upload.abort()` only rejects done(); its AbortMultipartUpload is
// sent once every part uploader has stopped, which (measured on RGW) never happens while the body
// stream stays open, and its outcome is reported to no one.
import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { HeadObjectCommandOutput, PutObjectCommandOutput } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { StorageError } from '../object-store.ts';
import { StreamObjectWriter, type ChunkSink } from '../stream-object-writer.ts';
import { changedNothing, isNotFound, wrap } from './s3-errors.ts';

/** How long abort() keeps checking that the key's multipart uploads are really gone. */
const SWEEP_DEADLINE_MS = 5_000;

function commandName(command: unknown): string {
  return (command as { constructor?: { name?: string } } | null)?.constructor?.name ?? '';
}

const UNCANCELLED_COMMANDS = new Set(['CreateMultipartUploadCommand', 'CompleteMultipartUploadCommand', 'AbortMultipartUploadCommand']);

type Send = (command: unknown, options?: { abortSignal?: AbortSignal }) => Promise<unknown>;

export interface StoreContext {
  client: S3Client;
  bucket: string;
}

/**
 * The sink of a writer whose object should fit one part: it keeps the chunks (the caller's, which
 * stay unchanged once written) for one PutObject, and never asks to wait, as it holds at most a
 * part. Past `limit` bytes it calls `overflow` once, writes what it kept into the stream that
 * returns, and from then on forwards every chunk and that stream's 'drain'.
 */
class SinglePartSink extends EventEmitter implements ChunkSink {
  readonly #limit: number;
  readonly #overflow: () => PassThrough;
  #chunks: Buffer[] = [];
  #bytes = 0;
  #stream: PassThrough | null = null;

  constructor(limit: number, overflow: () => PassThrough) {
    super();
    this.#limit = limit;
    this.#overflow = overflow;
  }

  write(chunk: Buffer): boolean {
    if (this.#stream) return this.#stream.write(chunk);
    this.#chunks.push(chunk);
    this.#bytes += chunk.length;
    if (this.#bytes <= this.#limit) return true;
    const stream = this.#overflow();
    this.#stream = stream;
    stream.on('drain', () => this.emit('drain'));
    let ready = true;
    for (const kept of this.#chunks) ready = stream.write(kept);
    this.#chunks = [];
    return ready;
  }

  /** The whole body for one PutObject, or null once it went to the stream. */
  takeBody(): Buffer | null {
    if (this.#stream) return null;
    const body = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks, this.#bytes);
    this.#chunks = [];
    return body;
  }

  drop(): void {
    this.#chunks = [];
  }
}

export interface WriterOptions {
  context: StoreContext;
  key: string;
  objectKey: string;
  contentType: string;
  partSize: number;
  queueSize: number;
  highWaterMark: number;
  /** Keep the body for one PutObject while it fits a part (its announced size does). */
  singlePart: boolean;
}

export class S3ObjectWriter extends StreamObjectWriter {
  readonly #context: StoreContext;
  readonly #options: WriterOptions;
  /** The S3 object key (with the store's prefix); `key` is the key as the caller knows it. */
  readonly #objectKey: string;
  readonly #singlePart: SinglePartSink | null;
  /** lib-storage's side: started at once, or when a single-part body outgrows its part. */
  #stream: { body: PassThrough; done: Promise<{ ETag?: string }> } | null = null;
  readonly #controller = new AbortController();
  readonly #inFlight = new Set<Promise<void>>();
  #uploadId: string | null = null;
  /** A CreateMultipartUpload got no definite answer (network error, cancelled): one may exist. */
  #createUncertain = false;
  /** A PutObject or CompleteMultipartUpload was sent: the object may exist. */
  #objectMayExist = false;

  constructor(options: WriterOptions) {
    // The sink is made before `this` exists; its overflow runs only on a later write().
    let writer: S3ObjectWriter | null = null;
    const singlePart = options.singlePart ? new SinglePartSink(options.partSize, () => writer!.#startStream().body) : null;
    const stream = singlePart ? null : new PassThrough({ highWaterMark: options.highWaterMark });
    super(options.key, singlePart ?? stream!);
    writer = this;
    this.#context = options.context;
    this.#options = options;
    this.#objectKey = options.objectKey;
    this.#singlePart = singlePart;
    if (stream) this.#startStream(stream);
  }

  /** Hands the body stream to lib-storage's Upload, which starts reading it at once. */
  #startStream(body = new PassThrough({ highWaterMark: this.#options.highWaterMark })): { body: PassThrough; done: Promise<{ ETag?: string }> } {
    const { context, partSize, queueSize, contentType } = this.#options;
    // lib-storage only calls `client.send` and reads `client.config`; this view of the shared
    // client routes its requests through #send, per writer, without touching the shared client.
    const client = Object.create(context.client) as S3Client;
    (client as unknown as { send: Send }).send = (command) => this.#send(command);
    const upload = new Upload({
      client,
      params: { Bucket: context.bucket, Key: this.#objectKey, Body: body, ContentType: contentType },
      partSize,
      queueSize,
      leavePartsOnError: false,
      abortController: this.#controller,
    });
    // Settles when the body ends (finish) or on abort/failure.
    const done = upload.done();
    done.catch((error: unknown) => {
      if (this.state === 'open') this.fail(error, 'write');
    });
    this.#stream = { body, done };
    return this.#stream;
  }

  protected override wrapError(error: unknown, operation: string): StorageError {
    return wrap(error, operation, this.key);
  }

  /** Every request of this writer: lib-storage's, and our own HeadObject. */
  #send<T>(command: unknown): Promise<T> {
    const name = commandName(command);
    // Requests carrying a body (UploadPart, PutObject) and our HeadObject are cancelled by an
    // abort. The small ones that create or end a multipart upload are let through, so that the
    // clean-up knows their outcome (the UploadId; whether the object exists) instead of guessing,
    // and lib-storage's own AbortMultipartUpload must not be cancelled by the abort it follows.
    const cancellable = !UNCANCELLED_COMMANDS.has(name);
    // Once stopped, nothing new starts (a CreateMultipartUpload sent now would outlive the clean-up).
    if (this.#controller.signal.aborted && name !== 'AbortMultipartUploadCommand') {
      return Promise.reject(Object.assign(new Error('The writer was stopped'), { name: 'AbortError' }));
    }
    const createsObject = name === 'PutObjectCommand' || name === 'CompleteMultipartUploadCommand';
    if (createsObject) this.#objectMayExist = true;
    const request = (this.#context.client.send as Send).call(
      this.#context.client,
      command,
      cancellable ? { abortSignal: this.#controller.signal } : undefined,
    ) as Promise<T>;
    const tracked = request.then(
      (output) => {
        if (name === 'CreateMultipartUploadCommand') this.#uploadId = (output as { UploadId?: string }).UploadId ?? null;
      },
      (error: unknown) => {
        if (name === 'CreateMultipartUploadCommand' && !changedNothing(error)) this.#createUncertain = true;
        // A refused PutObject/Complete wrote nothing (only one of them is ever sent per writer).
        if (createsObject && changedNothing(error)) this.#objectMayExist = false;
        // The SDK has already retried; report the failure now instead of when lib-storage gives up.
        if (name !== 'AbortMultipartUploadCommand' && this.state === 'open' && !this.#controller.signal.aborted) this.fail(error, 'write');
      },
    );
    this.#inFlight.add(tracked);
    void tracked.then(() => this.#inFlight.delete(tracked));
    return request;
  }

  protected override async complete(): Promise<{ size: number; etag: string | null }> {
    const body = this.#singlePart?.takeBody() ?? null;
    if (body !== null) {
      const { bucket } = this.#context;
      const output = await this.#send<PutObjectCommandOutput>(
        new PutObjectCommand({ Bucket: bucket, Key: this.#objectKey, Body: body, ContentLength: body.length, ContentType: this.#options.contentType }),
      );
      this.throwIfAborted();
      return { size: this.bytesWritten, etag: output.ETag || null };
    }
    const stream = this.#stream!;
    stream.body.end();
    const output = await stream.done;
    this.throwIfAborted();
    let etag = output.ETag || null;
    if (etag === null) {
      // RGW answers CompleteMultipartUpload without an ETag; HeadObject has it.
      const head = await this.#send<HeadObjectCommandOutput>(new HeadObjectCommand({ Bucket: this.#context.bucket, Key: this.#objectKey }));
      if (head.ContentLength !== undefined && head.ContentLength !== this.bytesWritten) {
        throw new Error(`wrote ${this.bytesWritten} bytes but the object holds ${head.ContentLength}`);
      }
      etag = head.ETag || null;
    }
    return { size: this.bytesWritten, etag };
  }

  protected override stop(): void {
    // What upload.abort() does; also cancels our requests in flight and the parts in flight, so
    // lib-storage stops.
    this.#controller.abort();
    this.#singlePart?.drop();
    this.#stream?.body.destroy();
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
