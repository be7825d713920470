// libuv runs every file system call on its thread pool, and an fsync holds its thread until the
// disk has the data: milliseconds on a file system with a journal. A durable upload to the fs
// driver makes several such calls (open, write, fsync, close, rename, the directory's fsync), so
// with Node's default of 4 threads, uploads queued for a thread while the main thread sat idle
// (docs/performance.md, "Defaults, and why"). libuv creates the pool on first use, so this module
// is main.ts's first import: it runs before anything touches the pool. An operator's own
// UV_THREADPOOL_SIZE is kept.
export const DEFAULT_THREAD_POOL_SIZE = 16;

process.env.UV_THREADPOOL_SIZE ??= String(DEFAULT_THREAD_POOL_SIZE);
