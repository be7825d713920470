// Resumable uploads on the fs driver: each upload appends to its own temp file
// `<root>/.uploads/tus/<uploadId>` (below the root, so the final rename stays on one file system;
// a directory of its own, so the crash sweeper's age-based step, which only knows the one-request
// temp files, never takes a paused upload). Each append first cuts the file back to the recorded
// offset (bytes of a request whose progress was never recorded, e.g. a crash mid-request), writes
// in order, and fsyncs before its progress is recorded. Completion fsyncs, renames into place and
// fsyncs the directory, as the one-request writer does.
import fs from 'node:fs';
import { mkdir, open, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { StorageError, assertValidKey } from '../object-store.ts';
import type { ResumableAppend, ResumableProgress, ResumableStore, ResumableUpload } from '../resumable-store.ts';

const TUS_DIR = path.join('.uploads', 'tus');

function wrap(error: unknown, operation: string, key: string): StorageError {
  if (error instanceof StorageError) return error;
  return new StorageError(`Storage ${operation} failed: ${(error as Error)?.message ?? error}`, { code: 'failed', operation, key, cause: error });
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

const fsProgress = (offset: number): ResumableProgress => ({ offset, multipartId: null, partCount: 0, tailBytes: 0 });

export class FsResumableStore implements ResumableStore {
  readonly #root: string;
  readonly #dir: string;

  constructor(options: { root: string }) {
    this.#root = path.resolve(options.root);
    this.#dir = path.join(this.#root, TUS_DIR);
  }

  #tempPath(id: string): string {
    if (!/^[0-9a-f-]{36}$/.test(id)) throw new StorageError(`Invalid upload id ${JSON.stringify(id)}`, { code: 'invalid-key', operation: 'tus' });
    return path.join(this.#dir, id);
  }

  async begin(upload: { id: string; key: string }): Promise<ResumableProgress> {
    assertValidKey(upload.key, 'begin');
    try {
      await mkdir(this.#dir, { recursive: true });
      const handle = await open(this.#tempPath(upload.id), 'w');
      await handle.close();
    } catch (error) {
      throw wrap(error, 'begin', upload.key);
    }
    return fsProgress(0);
  }

  async append(upload: ResumableUpload): Promise<ResumableAppend> {
    let handle: fs.promises.FileHandle;
    try {
      handle = await open(this.#tempPath(upload.id), 'r+');
      await handle.truncate(upload.offset);
    } catch (error) {
      throw wrap(error, 'append', upload.key);
    }
    let position = upload.offset;
    let closed = false;
    const close = async () => {
      if (closed) return;
      closed = true;
      await handle.close();
    };
    return {
      write: async (chunk) => {
        let written = 0;
        try {
          while (written < chunk.length) {
            const { bytesWritten } = await handle.write(chunk, written, chunk.length - written, position);
            written += bytesWritten;
            position += bytesWritten;
          }
        } catch (error) {
          throw wrap(error, 'append', upload.key);
        }
      },
      settle: async () => {
        try {
          await handle.sync();
        } catch (error) {
          throw wrap(error, 'append', upload.key);
        } finally {
          await close().catch(() => undefined);
        }
        return fsProgress(position);
      },
      abandon: async () => {
        await close().catch(() => undefined);
      },
    };
  }

  async complete(upload: ResumableUpload): Promise<void> {
    assertValidKey(upload.key, 'complete');
    const temp = this.#tempPath(upload.id);
    const target = path.join(this.#root, ...upload.key.split('/'));
    try {
      const handle = await open(temp, 'r+');
      try {
        await handle.truncate(upload.offset);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await mkdir(path.dirname(target), { recursive: true });
      await rename(temp, target);
      await syncDirectory(path.dirname(target));
    } catch (error) {
      throw wrap(error, 'complete', upload.key);
    }
  }

  async discard(upload: ResumableUpload): Promise<void> {
    try {
      await unlink(this.#tempPath(upload.id));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw wrap(error, 'discard', upload.key);
    }
  }
}
