import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../logging/logger.ts';
import type { ThumbnailTask, ThumbnailTaskResult } from '../pool/media-task-types.ts';
import type { S3ObjectStoreOptions } from '../storage/s3/s3-object-store.ts';

const PROCESS_FILE = fileURLToPath(new URL('../../workers/preview-process.ts', import.meta.url));

type ThumbnailOptions = Omit<ThumbnailTask, 'kind' | 'source'>;

export interface PreviewProcessOptions {
  logger: Pick<Logger, 'warn'>;
  /**
   * Images decoded at once (THUMBNAIL_CONCURRENCY; default 1): more may be in hand, their sources
   * read while others are decoded, so that storage round trips overlap the CPU work.
   */
  concurrency?: number;
  /**
   * The service's bucket (the s3 driver): the preview process reads images from it by key itself,
   * so that their bytes never pass through the service. Absent: images come as files or bytes.
   */
  s3?: Omit<S3ObjectStoreOptions, 'onRequest'>;
  /** Each S3 request the preview process made (the service's media_s3_requests_total). */
  onS3Request?: (operation: string) => void;
}

interface Waiting {
  resolve(result: ThumbnailTaskResult): void;
  reject(error: Error): void;
}

/**
 * Thumbnails made in a child process of their own (workers/preview-process.ts) running at the
 * lowest CPU priority (nice 19), so that on a busy machine they take only the CPU that uploads,
 * the database and everything else leave: a burst of uploads is not slowed by them, and they
 * catch up after it. The process starts with the first thumbnail and is started again after it
 * dies (an image that crashes libvips takes down this process, not the service); the thumbnails
 * it was making fail with an error, which the thumbnailer retries.
 */
export class PreviewProcess {
  private readonly logger: Pick<Logger, 'warn'>;
  private readonly concurrency: number;
  private readonly s3: PreviewProcessOptions['s3'];
  private readonly onS3Request: PreviewProcessOptions['onS3Request'];
  private child: ChildProcess | null = null;
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 1;
  private closed = false;

  constructor(options: PreviewProcessOptions) {
    this.logger = options.logger;
    this.concurrency = Math.max(1, options.concurrency ?? 1);
    this.s3 = options.s3;
    this.onS3Request = options.onS3Request;
  }

  /** Whether a source may be `{ key }`: the process reads the service's bucket itself. */
  get readsObjects(): boolean {
    return this.s3 !== undefined;
  }

  /** The child's pid while it runs (tests, diagnostics). */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** `source`: the image's file on this machine, its key in the bucket (readsObjects), or its bytes (sent over the IPC channel, a copy each way). */
  async thumbnail(source: ThumbnailTask['source'], options: ThumbnailOptions): Promise<ThumbnailTaskResult> {
    if (this.closed) throw new Error('the preview process is closed');
    const child = this.running();
    const id = this.nextId++;
    const task: ThumbnailTask = { kind: 'thumbnail', source, ...options };
    return new Promise<ThumbnailTaskResult>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      child.send({ id, task }, (error) => {
        if (error) this.settle(id, { error: `sending the image to the preview process failed: ${error.message}` });
      });
    });
  }

  /** Ends the child (its thumbnails in hand fail) and starts no other. */
  async close(): Promise<void> {
    this.closed = true;
    const child = this.child;
    if (!child) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.disconnect();
    await exited;
  }

  private running(): ChildProcess {
    if (this.child) return this.child;
    const child = fork(PROCESS_FILE, [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.on('message', (message: { id: number; result?: ThumbnailTaskResult; error?: string; s3Requests?: string[] }) => {
      for (const operation of message.s3Requests ?? []) this.onS3Request?.(operation);
      this.settle(message.id, message);
    });
    child.on('error', (error) => this.logger.warn({ err: error }, 'preview process error'));
    child.once('exit', (code, signal) => {
      if (this.child === child) this.child = null;
      if (!this.closed) this.logger.warn({ code, signal, thumbnails: this.waiting.size }, 'the preview process ended; the next thumbnail starts another');
      for (const id of [...this.waiting.keys()]) this.settle(id, { error: `the preview process ended (${signal ?? `exit ${code}`}) while making this thumbnail` });
    });
    // Before any task: the channel keeps the order.
    child.send({ setup: { concurrency: this.concurrency, s3: this.s3 ?? null } });
    this.child = child;
    return child;
  }

  private settle(id: number, message: { result?: ThumbnailTaskResult; error?: string }): void {
    const waiting = this.waiting.get(id);
    if (!waiting) return;
    this.waiting.delete(id);
    if (message.result) waiting.resolve(message.result);
    else waiting.reject(new Error(message.error ?? 'the preview process answered nothing'));
  }
}
