import type { UploadBody } from '../receive/upload-body.ts';

/**
 * A request body as an async iterable, with backpressure: the socket is paused while more than
 * `highWaterMark` bytes wait to be taken, and resumed once they are. The iteration throws the
 * body's abort reason (the client left) after the chunks that arrived before it.
 */
export function bodyChunks(body: UploadBody, highWaterMark = 1024 * 1024): AsyncIterable<Buffer> {
  const queue: Buffer[] = [];
  let queued = 0;
  let ended = false;
  let failure: Error | null = null;
  let paused = false;
  let wake: (() => void) | null = null;
  const notify = () => {
    const resolve = wake;
    wake = null;
    resolve?.();
  };
  body.consume({
    chunk: (data) => {
      queue.push(data);
      queued += data.length;
      if (!paused && queued > highWaterMark) {
        paused = true;
        body.pause();
      }
      notify();
    },
    end: () => {
      ended = true;
      notify();
    },
    abort: (reason) => {
      failure = reason;
      notify();
    },
  });
  return {
    async *[Symbol.asyncIterator]() {
      for (;;) {
        const next = queue.shift();
        if (next) {
          queued -= next.length;
          if (paused && queued <= highWaterMark / 2) {
            paused = false;
            body.resume();
          }
          yield next;
          continue;
        }
        if (failure) throw failure;
        if (ended) return;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
    },
  };
}
