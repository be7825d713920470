// The thread-pool calls of the fs driver on plain file descriptors, through fs's callback API: each
// is one hop to the pool and back, without the FileHandle and its promise machinery around it.
import fs from 'node:fs';

export function openDescriptor(file: string, flags: number, mode: number): Promise<number> {
  return new Promise((resolve, reject) => fs.open(file, flags, mode, (error, fd) => (error ? reject(error) : resolve(fd))));
}

/** One write of `chunks` at `position` (writev for several); resolves with the bytes written. */
export function writeAt(fd: number, chunks: Buffer[], position: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const done = (error: Error | null, bytes: number) => (error ? reject(error) : resolve(bytes));
    if (chunks.length === 1) fs.write(fd, chunks[0]!, 0, chunks[0]!.length, position, done);
    else fs.writev(fd, chunks, position, done);
  });
}

export function fsyncDescriptor(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fsync(fd, (error) => (error ? reject(error) : resolve())));
}
