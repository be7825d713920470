/**
 * The child process that makes thumbnails (src/previews/preview-process.ts), at the lowest CPU
 * priority. On Linux a priority belongs to a thread: every thread running now (Node's own, started
 * before this file) is set one by one, before sharp is loaded, so that the threads started later
 * (libuv's, libvips') inherit it. Tasks come and go over the IPC channel after a set-up message
 * (how many images are decoded at once; on the s3 driver the bucket's settings, as this process
 * reads the images from there). When the channel closes (the service stopped, or died), this
 * process ends.
 */
import { readdirSync } from 'node:fs';
import { setPriority } from 'node:os';
import PQueue from 'p-queue';
import { makeThumbnail, type ObjectReader } from '../src/previews/thumbnail-image.ts';
import type { ThumbnailTask, ThumbnailTaskResult } from '../src/pool/media-task-types.ts';
import { isStorageError } from '../src/storage/object-store.ts';
import { readBuffer } from '../src/storage/read-buffer.ts';
import type { S3ObjectStoreOptions } from '../src/storage/s3/s3-object-store.ts';

const LOWEST_PRIORITY = 19;

function lowerEveryThread(): void {
  let threads: string[];
  try {
    threads = readdirSync('/proc/self/task');
  } catch {
    setPriority(LOWEST_PRIORITY); // no /proc: the process as a whole, where that is what it means
    return;
  }
  for (const thread of threads) {
    try {
      setPriority(Number(thread), LOWEST_PRIORITY);
    } catch {
      // Ended meanwhile.
    }
  }
}

lowerEveryThread();

interface TaskMessage {
  id: number;
  task: ThumbnailTask;
}

/**
 * Sent once, before any task: how many images are decoded at once (the tasks' sources are read
 * meanwhile), and on the s3 driver the bucket this process reads the images from itself.
 */
interface SetupMessage {
  setup: { concurrency: number; s3: Omit<S3ObjectStoreOptions, 'onRequest'> | null };
}

let objects: ObjectReader | null = null;
let decoding = new PQueue({ concurrency: 1 });
/** The S3 requests made since the last answer, by operation: told with the next one (the service counts them in its metrics). */
let s3Requests: string[] = [];

function useStorage(options: Omit<S3ObjectStoreOptions, 'onRequest'>): void {
  // Imported only when asked for: the AWS SDK is ~30 MB of RSS.
  const store = import('../src/storage/s3/s3-object-store.ts').then(({ S3ObjectStore }) =>
    new S3ObjectStore({ ...options, onRequest: (operation) => s3Requests.push(operation) }));
  objects = async (key) => {
    try {
      return await readBuffer(await store, key);
    } catch (error) {
      if (isStorageError(error) && error.code === 'not-found') return null;
      throw error;
    }
  };
}

function answer(message: { id: number; result?: ThumbnailTaskResult; error?: string }): void {
  const requests = s3Requests;
  s3Requests = [];
  process.send!({ ...message, ...(requests.length > 0 && { s3Requests: requests }) });
}

process.on('message', (message: TaskMessage | SetupMessage) => {
  if ('setup' in message) {
    decoding = new PQueue({ concurrency: message.setup.concurrency });
    if (message.setup.s3) useStorage(message.setup.s3);
    return;
  }
  void makeThumbnail(message.task, { objects, decode: (work) => decoding.add(work) }).then(
    (result) => answer({ id: message.id, result }),
    (error: unknown) => answer({ id: message.id, error: (error as Error).message }),
  );
});
process.on('disconnect', () => process.exit(0));
