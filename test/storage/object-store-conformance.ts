// One conformance suite for every ObjectStore driver (like tus-node-server's utils/src/test/stores.ts).
// The driver's test file supplies a harness; the suite only uses the ObjectStore interface, plus
// the harness's independent look at what the driver leaves behind while writing.
import { createHash, randomBytes } from 'node:crypto';
import type { Test } from 'tap';
import { StorageError } from '../../src/storage/object-store.ts';
import type { ObjectStore, ObjectWriter } from '../../src/storage/object-store.ts';

const KiB = 1024;
const MiB = 1024 * KiB;

export interface ConformanceHarness {
  store: ObjectStore;
  /** In-progress uploads of `key` as seen without the store: temp files (fs), multipart uploads (s3). */
  pendingUploads(key: string): Promise<number>;
  /** Stores whose writes fail (unreachable/refusing storage), each with a name for the test title. */
  failingStores: { name: string; make(): ObjectStore }[];
  /**
   * Bytes after which the in-progress upload exists in storage (fs: at once; s3: once the first
   * part is cut, i.e. a little more than the part size).
   */
  bytesUntilUploadExists: number;
  /** Removes everything the suite wrote; called once at the end. */
  close(): Promise<void>;
}

/** Chunk sizes cycled through when writing, deliberately uneven. */
const CHUNK_SIZES = [1, 7, 65_536 + 13, 300_000, 4_093, MiB + 5, 17, 131_071, 2 * MiB - 3, 999];

/**
 * Writes `total` bytes produced by `chunkAt(offset, size)` honouring backpressure: after write()
 * returns false it waits for onDrain; an onError stops it (rejects) like the upload actor would.
 * `transient`: every chunk is handed over as a transient view of one scratch buffer, which is
 * overwritten as soon as write() returns (as a transport reuses its receive buffer).
 */
async function writeAll(
  writer: ObjectWriter,
  total: number,
  chunkAt: (offset: number, size: number) => Buffer,
  onProgress?: () => void,
  transient = false,
): Promise<{ pauses: number }> {
  const scratch = transient ? Buffer.alloc(Math.max(...CHUNK_SIZES)) : null;
  let wake: (() => void) | null = null;
  let failure: Error | null = null;
  writer.onDrain(() => wake?.());
  writer.onError((error) => {
    failure = error;
    wake?.();
  });
  let offset = 0;
  let pauses = 0;
  for (let index = 0; offset < total; index++) {
    if (failure) throw failure;
    const size = Math.min(CHUNK_SIZES[index % CHUNK_SIZES.length]!, total - offset);
    let ok: boolean;
    if (scratch) {
      chunkAt(offset, size).copy(scratch);
      ok = writer.write(scratch.subarray(0, size), true);
      scratch.fill(0xee, 0, size);
    } else {
      ok = writer.write(chunkAt(offset, size));
    }
    offset += size;
    onProgress?.();
    if (!ok) {
      pauses++;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      wake = null;
    }
  }
  if (failure) throw failure;
  return { pauses };
}

async function readAll(stream: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

async function poll(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A pattern for t.rejects / t.throws: a StorageError, with the given code if any. */
function storageError(code?: string): { name: string; code?: string } {
  return code === undefined ? { name: 'StorageError' } : { name: 'StorageError', code };
}

const mib = (bytes: number) => (bytes / MiB).toFixed(1);

export function runConformance(t: Test, name: string, makeStore: () => Promise<ConformanceHarness>): Promise<void> {
  return t.test(`ObjectStore conformance: ${name}`, async (t) => {
    const harness = await makeStore();
    const { store } = harness;
    t.teardown(() => harness.close());
    const run = randomBytes(4).toString('hex');
    let counter = 0;
    const keyFor = (label: string) => `media/team-${run}/${label}-${++counter}`;

    // Expects nothing under the key and no upload in progress for it (polling for async aborts).
    async function assertNothingLeft(t: Test, key: string) {
      t.equal(await store.stat(key), null, 'no object under the key');
      const gone = await poll(async () => (await harness.pendingUploads(key)) === 0);
      t.ok(gone, 'no upload left in progress (temp file / multipart upload)');
    }

    for (const size of [0, 1, 300 * KiB, 9 * MiB, 20 * MiB]) {
      t.test(`round trip of ${size} bytes in uneven chunks with backpressure`, async (t) => {
        const data = randomBytes(size);
        const key = keyFor(`round-trip-${size}`);
        const writer = store.openWriter(key, { contentType: 'application/octet-stream', expectedSize: size });
        const { pauses } = await writeAll(writer, size, (offset, length) => data.subarray(offset, offset + length));
        t.equal(writer.bytesWritten, size, 'bytesWritten counts every byte');
        const result = await writer.finish();
        t.equal(result.size, size, 'finish reports the size');
        t.comment(`${size} bytes: write() asked to wait ${pauses} times`);

        const info = await store.stat(key);
        t.ok(info, 'stat finds the object');
        t.equal(info?.size, size, 'stat size');
        // finish() may leave the etag to stat() (the fs driver does not stat every upload); when it names one, they agree.
        if (result.etag !== null) t.equal(info?.etag, result.etag, 'stat etag equals the etag finish reported');
        t.type(info?.etag, 'string', 'there is an etag');
        t.ok(info?.lastModified instanceof Date, 'lastModified is a Date');

        const whole = await readAll(await store.read(key));
        t.equal(whole.length, size, 'read back length');
        t.ok(whole.equals(data), 'bytes read back equal bytes written');

        if (size > 0) {
          const ranges: [number, number][] = [
            [0, 0],
            [Math.floor(size / 3), Math.min(size - 1, Math.floor(size / 3) + 70_000)],
            [size - 1, size - 1],
          ];
          for (const [start, end] of ranges) {
            const part = await readAll(await store.read(key, { start, end }));
            t.ok(part.equals(data.subarray(start, end + 1)), `range ${start}-${end} exact`);
          }
          const tail = await readAll(await store.read(key, { start: Math.floor(size / 2) }));
          t.ok(tail.equals(data.subarray(Math.floor(size / 2))), 'open-ended range exact');
          const clamped = await readAll(await store.read(key, { start: Math.max(0, size - 2), end: size + 100 }));
          t.ok(clamped.equals(data.subarray(Math.max(0, size - 2))), 'an end past the object is clamped');
          await t.rejects(store.read(key, { start: size }), storageError('invalid-range'), 'a range starting past the end is refused');
        }

        await writer.abort();
        t.ok(await store.stat(key), 'abort() after a successful finish() leaves the object to the caller');
        await store.remove(key);
        t.equal(await store.stat(key), null, 'gone after remove');
      });
    }

    t.test('several writers at once keep their bytes apart', async (t) => {
      const uploads = [3 * MiB, harness.bytesUntilUploadExists + 2 * MiB, 10, 2 * harness.bytesUntilUploadExists + 5].map((size, index) => ({
        key: keyFor(`parallel-${index}`),
        data: randomBytes(size),
      }));
      await Promise.all(
        uploads.map(async ({ key, data }) => {
          const writer = store.openWriter(key, { contentType: 'application/octet-stream' });
          await writeAll(writer, data.length, (offset, length) => data.subarray(offset, offset + length));
          await writer.finish();
        }),
      );
      for (const { key, data } of uploads) {
        t.ok((await readAll(await store.read(key))).equals(data), `${data.length} bytes intact`);
        await store.remove(key);
      }
    });

    t.test('location names where the objects are, as rows record it', async (t) => {
      // fs: the one directory of the service; s3: the bucket and the key prefix (storage-location.ts).
      t.match(store.location, store.driver === 'fs' ? /^fs$/ : /^s3:[a-z0-9][a-z0-9.-]+\/([A-Za-z0-9_.-]+\/)*$/);
    });

    t.test('missing objects', async (t) => {
      const key = keyFor('missing');
      t.equal(await store.stat(key), null, 'stat of a missing key is null');
      await t.rejects(store.read(key), storageError('not-found'), 'read of a missing key: StorageError not-found');
      await t.resolves(store.remove(key), 'remove of a missing key is fine');
    });

    t.test('remove then stat is null; remove twice is fine', async (t) => {
      const key = keyFor('remove');
      const writer = store.openWriter(key, { contentType: 'text/plain' });
      writer.write(Buffer.from('hello'));
      await writer.finish();
      t.equal((await store.stat(key))?.size, 5);
      await store.remove(key);
      t.equal(await store.stat(key), null, 'stat after remove');
      await t.resolves(store.remove(key), 'second remove');
      await t.rejects(store.read(key), storageError('not-found'));
    });

    t.test('abort mid-write leaves nothing', async (t) => {
      const key = keyFor('abort-mid-write');
      const data = randomBytes(harness.bytesUntilUploadExists + 3 * MiB);
      const writer = store.openWriter(key, { contentType: 'application/octet-stream', expectedSize: 100 * MiB });
      await writeAll(writer, data.length, (offset, length) => data.subarray(offset, offset + length));
      t.ok(await poll(async () => (await harness.pendingUploads(key)) > 0), 'an upload is in progress before the abort');
      await writer.abort();
      await assertNothingLeft(t, key);
      await t.rejects(writer.finish(), storageError('aborted'), 'finish after abort rejects');
      await t.resolves(writer.abort(), 'abort is idempotent');
      t.equal(writer.write(Buffer.from('late')), true, 'a write after abort is dropped');
    });

    t.test('abort before any byte leaves nothing', async (t) => {
      const key = keyFor('abort-at-once');
      const writer = store.openWriter(key, { contentType: 'application/octet-stream' });
      await writer.abort();
      await assertNothingLeft(t, key);
    });

    // A body announced small enough for one request (s3: kept for one PutObject) that turns out
    // larger than announced still lands whole: the announced size is a hint.
    t.test('a body larger than its expectedSize lands whole', async (t) => {
      const key = keyFor('outgrown');
      const data = randomBytes(7 * MiB + 123);
      const writer = store.openWriter(key, { contentType: 'application/octet-stream', expectedSize: 64 * KiB });
      await writeAll(writer, data.length, (offset, length) => data.subarray(offset, offset + length));
      const result = await writer.finish();
      t.equal(result.size, data.length, 'finish reports the whole size');
      t.ok((await readAll(await store.read(key))).equals(data), 'bytes read back equal bytes written');
      await store.remove(key);
    });

    // Transient chunks are views of memory the caller reuses once write() returns: whether the
    // writer writes them through or copies them (within its announced size, past it, past a part),
    // the object holds the bytes as they were when written.
    for (const [size, expectedSize] of [[300 * KiB, 300 * KiB + 200], [2 * MiB, 64 * KiB], [12 * MiB + 5, 3 * MiB], [9 * MiB, undefined]] as const) {
      t.test(`transient chunks of ${mib(size)} MiB (expectedSize ${expectedSize ?? 'none'}) land as written`, async (t) => {
        const key = keyFor(`transient-${size}`);
        const data = randomBytes(size);
        const writer = store.openWriter(key, { contentType: 'application/octet-stream', ...(expectedSize === undefined ? {} : { expectedSize }) });
        await writeAll(writer, size, (offset, length) => data.subarray(offset, offset + length), undefined, true);
        t.equal(writer.bytesWritten, size, 'bytesWritten counts every byte');
        t.equal((await writer.finish()).size, size, 'finish reports the size');
        t.ok((await readAll(await store.read(key))).equals(data), 'bytes read back equal the bytes as written');
        await store.remove(key);
      });
    }

    t.test('abort racing finish: finish rejects and nothing is left', async (t) => {
      for (const [size, expectedSize] of [[10, undefined], [10, 10], [2 * MiB, 2 * MiB], [12 * MiB, undefined]] as const) {
        const key = keyFor(`abort-finish-${size}`);
        const data = randomBytes(size);
        const writer = store.openWriter(key, { contentType: 'application/octet-stream', ...(expectedSize === undefined ? {} : { expectedSize }) });
        await writeAll(writer, size, (offset, length) => data.subarray(offset, offset + length));
        const finishing = writer.finish();
        const aborting = writer.abort();
        await t.rejects(finishing, storageError('aborted'), `${size} bytes (expectedSize ${expectedSize}): finish rejects`);
        await aborting;
        await assertNothingLeft(t, key);
      }
    });

    t.test('checkAccess resolves for a usable store', async (t) => {
      await t.resolves(store.checkAccess());
    });

    for (const failing of harness.failingStores) {
      t.test(`writer error (${failing.name}) surfaces through onError, finish rejects, nothing is left`, async (t) => {
        const bad = failing.make();
        t.teardown(() => bad.close());
        const key = keyFor('failing');
        const writer = bad.openWriter(key, { contentType: 'application/octet-stream' });
        const errors: Error[] = [];
        writer.onError((error) => errors.push(error));
        const data = randomBytes(harness.bytesUntilUploadExists + MiB);
        // The failure comes while writing: writeAll stops on onError (or may finish first for fs).
        const written = await writeAll(writer, data.length, (offset, length) => data.subarray(offset, offset + length)).then(
          () => null,
          (error: unknown) => error,
        );
        t.ok(await poll(async () => errors.length > 0, 10_000), 'onError was called');
        t.equal(errors.length, 1, 'onError was called once');
        t.ok(errors[0] instanceof StorageError, 'the error is a StorageError');
        t.comment(`${failing.name}: ${errors[0]?.message}`);
        if (written !== null) t.equal(written, errors[0], 'the writing stopped with that error');
        await t.rejects(writer.finish(), storageError(), 'finish rejects with a StorageError');
        await t.resolves(writer.abort(), 'abort after an error resolves');
        await t.resolves(writer.abort(), 'and again');
        const late: Error[] = [];
        writer.onError((error) => late.push(error));
        await new Promise((resolve) => setImmediate(resolve));
        t.equal(late.length, 1, 'a listener added after the failure hears of it too');
        await assertNothingLeft(t, key);
      });

      for (const expectedSize of [undefined, 5]) {
        t.test(`small write to a failing store (${failing.name}, expectedSize ${expectedSize}): finish rejects`, async (t) => {
          const bad = failing.make();
          t.teardown(() => bad.close());
          const key = keyFor('failing-small');
          const writer = bad.openWriter(key, { contentType: 'text/plain', ...(expectedSize === undefined ? {} : { expectedSize }) });
          writer.onError(() => undefined);
          writer.write(Buffer.from('small'));
          await t.rejects(writer.finish(), storageError(), 'finish rejects with a StorageError');
          await t.resolves(writer.abort(), 'abort afterwards resolves');
          await assertNothingLeft(t, key);
        });
      }
    }

    t.test('listStaleUploads finds an upload in progress; abortStaleUpload removes it', async (t) => {
      const key = keyFor('stale');
      const data = randomBytes(harness.bytesUntilUploadExists + MiB);
      const writer = store.openWriter(key, { contentType: 'application/octet-stream', expectedSize: 100 * MiB });
      writer.onError(() => undefined); // the sweeper pulls the upload from under the writer
      await writeAll(writer, data.length, (offset, length) => data.subarray(offset, offset + length));
      const listed = await poll(async () => (await harness.pendingUploads(key)) > 0);
      t.ok(listed, 'the upload exists in storage');

      const past = await store.listStaleUploads(new Date(Date.now() - 3_600_000));
      t.notOk(past.some((upload) => upload.key === key), 'not stale against an hour ago');
      const stale = await store.listStaleUploads(new Date(Date.now() + 1_000));
      const mine = stale.filter((upload) => upload.key === key);
      t.equal(mine.length, 1, 'listed once with olderThan = now + 1 s');
      const upload = mine[0]!;
      t.type(upload.uploadId, 'string');
      t.ok(upload.startedAt === null || upload.startedAt.getTime() <= Date.now() + 1_000, 'startedAt is not in the future');

      await store.abortStaleUpload(upload);
      await t.resolves(store.abortStaleUpload(upload), 'aborting it again is fine');
      t.ok(await poll(async () => (await harness.pendingUploads(key)) === 0), 'the upload is gone');
      const after = await store.listStaleUploads(new Date(Date.now() + 1_000));
      t.notOk(after.some((each) => each.key === key && each.uploadId === upload.uploadId), 'no longer listed');

      // The writer whose upload was swept can no longer finish; it must not leave anything either.
      await t.rejects(writer.finish(), storageError(), 'the swept writer cannot finish');
      await writer.abort();
      await assertNothingLeft(t, key);
    });

    t.test('abortUploadsOf aborts the fresh uploads of one key and nothing else', async (t) => {
      const key = keyFor('dead');
      const other = keyFor('alive');
      const data = randomBytes(harness.bytesUntilUploadExists + MiB);
      const writers = [key, other].map((each) => {
        const writer = store.openWriter(each, { contentType: 'application/octet-stream', expectedSize: 100 * MiB });
        writer.onError(() => undefined);
        return writer;
      });
      for (const writer of writers) await writeAll(writer, data.length, (offset, length) => data.subarray(offset, offset + length));
      t.ok(await poll(async () => (await harness.pendingUploads(key)) > 0 && (await harness.pendingUploads(other)) > 0), 'both uploads exist');

      t.equal(await store.abortUploadsOf(key), 1, 'one upload of the key aborted, fresh as it is');
      t.ok(await poll(async () => (await harness.pendingUploads(key)) === 0), 'it is gone');
      t.equal(await store.abortUploadsOf(key), 0, 'again: nothing left to abort');
      t.ok((await harness.pendingUploads(other)) > 0, "the other key's upload is untouched");

      await writers[0]!.abort();
      const finished = await writers[1]!.finish();
      t.equal(finished.size, data.length, 'the other upload finishes');
      await store.remove(other);
      await assertNothingLeft(t, key);
      await t.rejects(store.abortUploadsOf('../escape'), storageError('invalid-key'));
    });

    t.test('invalid keys throw', async (t) => {
      const invalid = ['', '/abs', 'a/../b', '..', './a', 'a//b', 'a/', 'sp ace', 'ümlaut', 'back\\slash', 'q?x', 'x'.repeat(513)];
      for (const key of invalid) {
        const shown = JSON.stringify(key.length > 20 ? `${key.slice(0, 20)}…` : key);
        t.throws(() => store.openWriter(key, { contentType: 'text/plain' }), storageError('invalid-key'), `openWriter ${shown}`);
        await t.rejects(store.read(key), storageError('invalid-key'), `read ${shown}`);
        await t.rejects(store.stat(key), storageError('invalid-key'), `stat ${shown}`);
        await t.rejects(store.remove(key), storageError('invalid-key'), `remove ${shown}`);
      }
      const longest = `k/${'x'.repeat(200)}/${'y'.repeat(309)}`;
      t.equal(longest.length, 512);
      const writer = store.openWriter(longest, { contentType: 'text/plain' });
      t.pass('a 512-character key is accepted');
      await writer.abort();
      await t.rejects(store.read(keyFor('x'), { start: 5, end: 2 }), storageError('invalid-range'), 'end before start is refused');
    });

    t.test('64 MiB through the store (diagnostics only)', async (t) => {
      const total = 64 * MiB;
      const pool = randomBytes(4 * MiB);
      const key = keyFor('big');
      const hash = createHash('sha256');
      const chunkAt = (offset: number, size: number) => {
        const start = (offset * 7) % (pool.length - size);
        const chunk = pool.subarray(start, start + size);
        hash.update(chunk);
        return chunk;
      };
      global.gc?.();
      const rssBefore = process.memoryUsage.rss();
      let rssPeak = rssBefore;
      const started = performance.now();
      const writer = store.openWriter(key, { contentType: 'application/octet-stream', expectedSize: total });
      const { pauses } = await writeAll(writer, total, chunkAt, () => {
        rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
      });
      const written = performance.now();
      const result = await writer.finish();
      const finished = performance.now();
      rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
      t.equal(result.size, total);
      const seconds = (finished - started) / 1000;
      t.comment(
        `${name}: 64 MiB written in ${seconds.toFixed(2)} s = ${(64 / seconds).toFixed(0)} MiB/s ` +
          `(writes ${((written - started) / 1000).toFixed(2)} s, finish ${((finished - written) / 1000).toFixed(2)} s), ` +
          `${pauses} backpressure pauses, RSS ${mib(rssBefore)} → peak ${mib(rssPeak)} MiB (growth ${mib(rssPeak - rssBefore)} MiB)`,
      );
      const readStarted = performance.now();
      const check = createHash('sha256');
      let readBytes = 0;
      for await (const chunk of await store.read(key)) {
        check.update(chunk);
        readBytes += chunk.length;
      }
      const readSeconds = (performance.now() - readStarted) / 1000;
      t.comment(`${name}: 64 MiB read back in ${readSeconds.toFixed(2)} s = ${(64 / readSeconds).toFixed(0)} MiB/s`);
      t.equal(readBytes, total, 'read back length');
      t.equal(check.digest('hex'), hash.digest('hex'), 'read back hash');
      await store.remove(key);
    });
  }).then(() => undefined);
}
