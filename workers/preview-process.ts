/**
 * The child process that makes thumbnails (src/previews/preview-process.ts), at the lowest CPU
 * priority. On Linux a priority belongs to a thread: every thread running now (Node's own, started
 * before this file) is set one by one, before sharp is loaded, so that the threads started later
 * (libuv's, libvips') inherit it. Tasks come and go over the IPC channel; when the channel closes
 * (the service stopped, or died), this process ends.
 */
import { readdirSync } from 'node:fs';
import { setPriority } from 'node:os';
import { makeThumbnail } from '../src/previews/thumbnail-image.ts';
import type { ThumbnailTask } from '../src/pool/media-task-types.ts';

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

process.on('message', (message: TaskMessage) => {
  void makeThumbnail(message.task).then(
    (result) => process.send!({ id: message.id, result }),
    (error: unknown) => process.send!({ id: message.id, error: (error as Error).message }),
  );
});
process.on('disconnect', () => process.exit(0));
