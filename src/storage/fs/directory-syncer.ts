import fs from 'node:fs';
import { fsyncDescriptor } from './descriptor-ops.ts';

/**
 * Opens and closes the directory on the main thread, and only its fsync goes to the thread pool:
 * the directory was just renamed into, so the open is a lookup in the kernel's cache, and a hop to
 * the pool costs two thread wake-ups.
 */
export async function fsyncDirectory(dir: string): Promise<void> {
  const fd = fs.openSync(dir, 'r');
  try {
    await fsyncDescriptor(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** The fsyncs of one directory: the one running, and the one that waits for it to end. */
interface DirectoryState {
  running: Promise<void> | null;
  next: Promise<void> | null;
}

/**
 * Makes renames into a directory durable, sharing fsyncs between concurrent callers.
 *
 * An fsync of a directory covers every entry change made before it started. So a caller whose
 * rename happened while an fsync of that directory was already running waits for the next one,
 * which starts when the running one ends and serves every caller that arrived meanwhile. A burst
 * of uploads into one team's directory then costs a few directory fsyncs instead of one each
 * (each fsync waits for the disk).
 */
export class DirectorySyncer {
  readonly #directories = new Map<string, DirectoryState>();
  readonly #fsync: (dir: string) => Promise<void>;

  /** `fsync` is the real directory fsync; tests wrap it to watch the calls. */
  constructor(fsync: (dir: string) => Promise<void> = fsyncDirectory) {
    this.#fsync = fsync;
  }

  sync(dir: string): Promise<void> {
    let state = this.#directories.get(dir);
    if (!state) {
      state = { running: null, next: null };
      this.#directories.set(dir, state);
    }
    if (!state.running) return this.#start(dir, state);
    // The running fsync may have started before the caller's rename: wait for the next one.
    state.next ??= state.running.catch(() => undefined).then(() => {
      state.next = null;
      return this.#start(dir, state);
    });
    return state.next;
  }

  #start(dir: string, state: DirectoryState): Promise<void> {
    const running = this.#fsync(dir).finally(() => {
      state.running = null;
      if (!state.next) this.#directories.delete(dir);
    });
    state.running = running;
    return running;
  }
}
