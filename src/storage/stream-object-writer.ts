// The life cycle both drivers' writers share: bytes go into a sink (the fs driver's temp file
// queue, the s3 driver's PassThrough that lib-storage reads), then finish() completes the
// object or abort()/a failure stops the transfer and cleans up. The drivers supply only what
// differs: how to complete the object, how to stop the transfer, how to clean up, and how to wrap
// their errors; they report failures of the transfer through fail().
import { StorageError } from './object-store.ts';
import type { ObjectWriter } from './object-store.ts';

/** Where a writer's bytes go: a Writable, or anything that queues chunks and reports 'drain' like one. */
export interface ChunkSink {
  write(chunk: Buffer): boolean;
  /** Takes a chunk it must not keep (see ObjectWriter.write); absent: the writer copies the chunk and write()s the copy. */
  writeTransient?(chunk: Buffer): boolean;
  on(event: 'drain', listener: () => void): unknown;
}

export type WriterState = 'open' | 'finishing' | 'finished' | 'failed' | 'aborted';

const CLEANUP_RETRIES = 9;

export abstract class StreamObjectWriter implements ObjectWriter {
  /** The key as the caller knows it. */
  protected readonly key: string;
  readonly #body: ChunkSink;
  #state: WriterState = 'open';
  #bytes = 0;
  #failure: StorageError | null = null;
  #errorListeners: ((error: Error) => void)[] = [];
  #cleanup: Promise<void> | null = null;
  #cleanupRetries = 0;
  #finishing: Promise<{ size: number; etag: string | null }> | null = null;
  #aborting: Promise<void> | null = null;

  constructor(key: string, body: ChunkSink) {
    this.key = key;
    this.#body = body;
  }

  /**
   * Ends the body and makes the object visible under its key; called once, by finish(), in state
   * 'finishing'. Throws on failure (finish() then fails the writer and cleans up); calls
   * throwIfAborted() between steps so that an abort() meanwhile is not undone.
   */
  protected abstract complete(): Promise<{ size: number; etag: string | null }>;

  /** Stops the transfer at once (no more bytes go out); called on failure and on abort(). */
  protected abstract stop(): void;

  /** Removes whatever the writer has left in storage; may be called again after it failed. */
  protected abstract cleanUp(): Promise<void>;

  /** The driver's StorageError for a failure of `operation`. */
  protected abstract wrapError(error: unknown, operation: string): StorageError;

  protected get state(): WriterState {
    return this.#state;
  }

  get bytesWritten(): number {
    return this.#bytes;
  }

  write(chunk: Buffer, transient = false): boolean {
    if (this.#state === 'open') {
      this.#bytes += chunk.length;
      if (!transient) return this.#body.write(chunk);
      return this.#body.writeTransient ? this.#body.writeTransient(chunk) : this.#body.write(Buffer.from(chunk));
    }
    // After a failure or abort the upload is over and the caller has been told; drop the bytes.
    if (this.#state === 'failed' || this.#state === 'aborted') return true;
    throw new StorageError('write() after finish()', { code: 'failed', operation: 'write', key: this.key });
  }

  onDrain(listener: () => void): void {
    this.#body.on('drain', listener);
  }

  onError(listener: (error: Error) => void): void {
    const failure = this.#failure;
    if (failure?.operation === 'write') queueMicrotask(() => listener(failure));
    else this.#errorListeners.push(listener);
  }

  finish(): Promise<{ size: number; etag: string | null }> {
    this.#finishing ??= this.#finish();
    return this.#finishing;
  }

  abort(): Promise<void> {
    if (this.#state === 'finished') return Promise.resolve();
    this.#aborting ??= this.#abort().catch((error: unknown) => {
      this.#aborting = null; // let a later call try again
      throw this.wrapError(error, 'abort');
    });
    return this.#aborting;
  }

  /**
   * The writer has failed: stops the transfer, starts the clean-up and, for a write failure,
   * tells the onError listeners. Only the first failure counts; returns it.
   */
  protected fail(error: unknown, operation: 'write' | 'finish'): StorageError {
    if (this.#failure) return this.#failure;
    const failure = this.wrapError(error, operation);
    this.#state = 'failed';
    this.#failure = failure;
    this.stop();
    this.#runCleanup().catch(() => undefined);
    const listeners = this.#errorListeners;
    this.#errorListeners = [];
    if (operation === 'write') for (const listener of listeners) listener(failure);
    return failure;
  }

  /** Throws once abort() was called; abort() removes whatever finish() has written so far. */
  protected throwIfAborted(): void {
    if (this.#state === 'aborted') throw this.#abortedError();
  }

  #abortedError(): StorageError {
    return new StorageError('The writer was aborted', { code: 'aborted', operation: 'finish', key: this.key });
  }

  async #finish(): Promise<{ size: number; etag: string | null }> {
    if (this.#failure) {
      await this.#runCleanup().catch(() => undefined);
      throw this.#failure;
    }
    this.throwIfAborted();
    this.#state = 'finishing';
    try {
      const result = await this.complete();
      this.throwIfAborted();
      this.#state = 'finished';
      return result;
    } catch (error) {
      if ((this.#state as WriterState) === 'aborted') throw this.#abortedError(); // abort() cleans up
      const failure = this.fail(error, 'finish');
      await this.#runCleanup().catch(() => undefined);
      throw failure;
    }
  }

  async #abort(): Promise<void> {
    this.#state = 'aborted';
    this.stop();
    if (this.#finishing) await this.#finishing.catch(() => undefined);
    await this.#runCleanup();
  }

  /** One clean-up at a time; a failed one is run again by the next abort() and, meanwhile, in the background. */
  #runCleanup(): Promise<void> {
    if (!this.#cleanup) {
      const attempt = this.cleanUp();
      this.#cleanup = attempt;
      attempt.catch(() => {
        if (this.#cleanup === attempt) this.#cleanup = null;
        this.#retryCleanupLater();
      });
    }
    return this.#cleanup;
  }

  /**
   * Storage that failed mid-upload is often back within seconds, while the
   * crash sweeper only looks at leftovers minutes old: retry the clean-up with
   * backoff (about five minutes in all), without keeping the process alive.
   */
  #retryCleanupLater(): void {
    if (this.#cleanupRetries >= CLEANUP_RETRIES) return;
    const delay = Math.min(1_000 * 2 ** this.#cleanupRetries, 60_000);
    this.#cleanupRetries++;
    setTimeout(() => void this.#runCleanup().catch(() => undefined), delay).unref();
  }
}
