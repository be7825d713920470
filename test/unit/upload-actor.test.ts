import t from 'tap';
import { ServiceError } from '../../src/errors/service-error.ts';
import { ClientAbortedError } from '../../src/http/request-body.ts';
import type { ObjectWriter } from '../../src/storage/object-store.ts';
import type { BodyParser, BodyParserEvents, FileStart } from '../../src/uploads/parsers/body-parser.ts';
import { refusalAtFileStart } from '../../src/uploads/options/file-refusal.ts';
import { UNRESERVED_BYTES, UNRESERVED_DECLARED_BYTES, UploadActor, type ReceivedFile, type SniffOutcome, type UploadEnvironment } from '../../src/uploads/receive/upload-actor.ts';
import type { UploadOptions } from '../../src/uploads/options/upload-options.ts';

// The actor is driven only by messages: these tests feed it messages and
// watch what it asks of its environment, with no socket, storage or database.

class FakeWriter implements ObjectWriter {
  chunks: Buffer[] = [];
  accepting = true;
  roomWhileBehind = false;
  copiesChunks = false;
  takesWhileBehind(): boolean {
    return this.roomWhileBehind;
  }
  finished = false;
  aborted = false;
  drainListeners: (() => void)[] = [];
  errorListeners: ((error: Error) => void)[] = [];
  get bytesWritten() {
    return this.chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  }
  write(chunk: Buffer) {
    this.chunks.push(chunk);
    return this.accepting;
  }
  onDrain(listener: () => void) {
    this.drainListeners.push(listener);
  }
  onError(listener: (error: Error) => void) {
    this.errorListeners.push(listener);
  }
  async finish() {
    this.finished = true;
    return { size: this.bytesWritten, etag: null };
  }
  async abort() {
    this.aborted = true;
  }
}

/** Treats each written chunk as file bytes; startFile() lets a test announce more files. Like the real parsers, a callback's throw goes to error(). */
class FakeParser implements BodyParser {
  private readonly events: BodyParserEvents;
  private started = false;
  private skipping = false;
  private readonly first: FileStart | null;
  destroyed = false;
  constructor(events: BodyParserEvents, first: FileStart | null) {
    this.events = events;
    this.first = first;
  }
  private guarded(work: () => void) {
    if (this.destroyed) return;
    try {
      work();
    } catch (error) {
      this.destroyed = true;
      this.events.error(error);
    }
  }
  startFile(info: FileStart) {
    this.guarded(() => {
      if (this.started && !this.skipping) this.events.fileEnd();
      this.started = true;
      this.skipping = !this.events.fileStart(info);
    });
  }
  write(chunk: Buffer) {
    if (!this.started && this.first) this.startFile(this.first);
    this.guarded(() => {
      if (!this.skipping) this.events.fileData(chunk);
    });
  }
  end() {
    this.guarded(() => {
      if (this.started && !this.skipping) this.events.fileEnd();
      this.events.finish({ fileName: 'a.bin' });
    });
  }
  destroy() {
    this.destroyed = true;
  }
}

interface Harness {
  actor: UploadActor<ReceivedFile>;
  writers: FakeWriter[];
  parser: () => FakeParser;
  calls: string[];
  reserveRequests: number[];
  /** The `ahead` of each reservation request (null: none offered). */
  aheadRequests: (number | null)[];
  resolveSniff: (outcome: SniffOutcome) => void;
  /** true: the team grants the most asked (`ahead`, else the step); false: nothing fits; a number: that many bytes. */
  resolveReserve: (granted: boolean | number) => void;
}

interface HarnessOptions {
  maxBodyBytes?: number;
  maxFileBytes?: number | null;
  commit?: () => Promise<ReceivedFile>;
  first?: FileStart | null;
  /** The multipart route's query options (null: the JSON route). */
  options?: UploadOptions | null;
  expectedFileBytes?: number | null;
  aheadLikelyGranted?: boolean;
}

function harness(options: HarnessOptions = {}): Harness {
  const calls: string[] = [];
  const writers: FakeWriter[] = [];
  const reserveRequests: number[] = [];
  const aheadRequests: (number | null)[] = [];
  let parser: FakeParser | null = null;
  let sniffResolver: (outcome: SniffOutcome) => void = () => undefined;
  let reserveResolver: (granted: boolean | number) => void = () => undefined;
  let hashed = 0;
  const env: UploadEnvironment<ReceivedFile> = {
    createParser: (events) => (parser = new FakeParser(events, options.first === undefined ? { fieldName: 'file', fileName: 'a.bin', declaredType: null } : options.first)),
    checkFile: (file) => refusalAtFileStart(options.options ?? null, file),
    openWriter: () => {
      const writer = new FakeWriter();
      writers.push(writer);
      return writer;
    },
    sniff: () => new Promise((resolve) => (sniffResolver = resolve)),
    hashChunk: (chunk) => {
      hashed += chunk.length;
    },
    resetHash: () => {
      hashed = 0;
      calls.push('resetHash');
    },
    digest: async () => `hash-of-${hashed}`,
    reserve: (step, ahead) => {
      reserveRequests.push(step);
      aheadRequests.push(ahead);
      return new Promise((resolve) => {
        reserveResolver = (granted) => resolve(granted === true ? (ahead ?? step) : granted === false ? 0 : granted);
      });
    },
    release: async () => {
      calls.push('release');
    },
    commit: async (received, writer) => {
      calls.push('commit');
      await writer.finish();
      return options.commit ? options.commit() : received;
    },
    pauseBody: () => calls.push('pause'),
    resumeBody: () => calls.push('resume'),
  };
  const actor = new UploadActor(env, {
    maxBodyBytes: options.maxBodyBytes ?? 1e9, maxFileBytes: options.maxFileBytes ?? null, expectedFileBytes: options.expectedFileBytes ?? null,
    aheadLikelyGranted: options.aheadLikelyGranted ?? false,
  });
  return {
    actor,
    writers,
    parser: () => parser!,
    calls,
    reserveRequests,
    aheadRequests,
    resolveSniff: (outcome) => sniffResolver(outcome),
    resolveReserve: (granted) => reserveResolver(granted),
  };
}

const allowed: SniffOutcome = { contentType: 'image/png', blocked: null };

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

t.test('a complete upload commits with the exact size and hash, bytes in order', async (t) => {
  const h = harness();
  const chunks = [Buffer.from('hello '), Buffer.alloc(5000, 1), Buffer.from('world')];
  for (const data of chunks) h.actor.send({ type: 'chunk', data });
  h.actor.send({ type: 'end' });
  t.equal(h.actor.currentState, 'receiving', 'waits for the sniff result');
  h.resolveSniff(allowed);
  const received = await h.actor.result;
  t.equal(received.size, 5011);
  t.equal(received.hash, 'hash-of-5011');
  t.equal(received.sniffedType, 'image/png');
  t.same(received.fields, { fileName: 'a.bin' });
  t.same(Buffer.concat(h.writers[0]!.chunks), Buffer.concat(chunks));
  t.equal(h.actor.currentState, 'done');
  t.notOk(h.calls.includes('release'), 'nothing to release after a commit');
});

t.test('the body pauses while the writer is behind and resumes on drain', async (t) => {
  const h = harness();
  h.actor.send({ type: 'chunk', data: Buffer.from('a') });
  h.writers[0]!.accepting = false;
  h.actor.send({ type: 'chunk', data: Buffer.from('b') });
  t.same(h.calls, ['pause']);
  h.actor.send({ type: 'chunk', data: Buffer.from('c') });
  t.same(h.calls, ['pause'], 'pauses once');
  h.writers[0]!.accepting = true;
  h.writers[0]!.drainListeners.forEach((listener) => listener());
  t.same(h.calls, ['pause', 'resume']);
});

t.test('views of the transport memory are asked for only while a writer that copies every chunk is receiving', async (t) => {
  const h = harness();
  t.notOk(h.actor.writerCopiesChunks, 'no writer yet');
  h.actor.send({ type: 'chunk', data: Buffer.from('a') });
  t.notOk(h.actor.writerCopiesChunks, 'a writer that may keep chunks');
  h.writers[0]!.copiesChunks = true;
  t.ok(h.actor.writerCopiesChunks, 'a writer that copies them');
  h.actor.send({ type: 'abort', reason: new ClientAbortedError() });
  await rejection(h.actor.result);
  t.notOk(h.actor.writerCopiesChunks, 'a failed upload asks for nothing');
});

t.test('a body paused only by a writer that writes through may be handed more; paused for anything else, not', async (t) => {
  const h = harness();
  h.actor.send({ type: 'chunk', data: Buffer.from('a') });
  t.notOk(h.actor.takesWhilePaused, 'not paused: the body flows as usual');
  h.writers[0]!.accepting = false;
  h.actor.send({ type: 'chunk', data: Buffer.from('b') });
  t.notOk(h.actor.takesWhilePaused, 'a writer that would hold the bytes in memory takes no more while behind');
  h.writers[0]!.roomWhileBehind = true;
  t.ok(h.actor.takesWhilePaused, 'a writer that has room while behind does');
  h.actor.send({ type: 'chunk', data: Buffer.alloc(UNRESERVED_BYTES) });
  t.equal(h.reserveRequests.length, 1, 'the file outgrew its unreserved size');
  t.ok(h.actor.takesWhilePaused, 'while a reservation is on its way, the file may grow into what it asks for');
  h.actor.send({ type: 'chunk', data: Buffer.alloc(h.reserveRequests[0]!) });
  t.notOk(h.actor.takesWhilePaused, 'past that, the body waits for the reservation whatever the writer can do');
  h.resolveReserve(true);
  await new Promise((resolve) => setImmediate(resolve));
  t.ok(h.actor.takesWhilePaused, 'reserved, and the writer still behind');
  h.actor.send({ type: 'abort', reason: new ClientAbortedError() });
  await rejection(h.actor.result);
  t.notOk(h.actor.takesWhilePaused, 'a failed upload takes nothing');
});

t.test('a body past the size limit fails with 413 and cleans up', async (t) => {
  const h = harness({ maxBodyBytes: 10 });
  h.actor.send({ type: 'chunk', data: Buffer.alloc(8) });
  h.actor.send({ type: 'chunk', data: Buffer.alloc(8) });
  const error = (await rejection(h.actor.result)) as ServiceError;
  t.equal(error.status, 413);
  t.ok(h.writers[0]!.aborted, 'storage write aborted');
  t.ok(h.calls.includes('release'), 'reservation released');
  t.ok(h.parser().destroyed);
  h.actor.send({ type: 'chunk', data: Buffer.alloc(1) });
  t.equal(h.actor.currentState, 'failed', 'messages after failure are ignored');
});

t.test('a file past maxMediaFileSize fails with 402 maxMediaFileSize', async (t) => {
  const h = harness({ maxFileBytes: 100 });
  h.actor.send({ type: 'chunk', data: Buffer.alloc(101) });
  const error = (await rejection(h.actor.result)) as ServiceError;
  t.equal(error.status, 402);
  t.equal(error.messageKey, 'error.teamLimits.maxMediaFileSize');
  t.ok(h.writers[0]!.aborted);
});

t.test('a blocked type fails with 415 as soon as the sniff says so', async (t) => {
  const h = harness();
  h.actor.send({ type: 'chunk', data: Buffer.alloc(5000) });
  h.resolveSniff({ contentType: null, blocked: 'executable' });
  const error = (await rejection(h.actor.result)) as ServiceError;
  t.equal(error.status, 415);
  t.ok(h.writers[0]!.aborted);
  t.notOk(h.calls.includes('commit'));
});

t.test('a client abort mid-upload aborts the write and releases the reservation', async (t) => {
  const h = harness();
  h.actor.send({ type: 'chunk', data: Buffer.alloc(100) });
  h.actor.send({ type: 'abort', reason: new ClientAbortedError() });
  t.ok((await rejection(h.actor.result)) instanceof ClientAbortedError);
  t.ok(h.writers[0]!.aborted);
  t.ok(h.calls.includes('release'));
});

t.test('a storage error fails the upload', async (t) => {
  const h = harness();
  h.actor.send({ type: 'chunk', data: Buffer.alloc(100) });
  h.writers[0]!.errorListeners.forEach((listener) => listener(new Error('storage down')));
  t.match(await rejection(h.actor.result), { message: 'storage down' });
  t.ok(h.writers[0]!.aborted);
});

t.test('past the unreserved size the upload reserves, grows into what it asks for meanwhile, and fails with 402 when storage is full', async (t) => {
  const h = harness();
  h.actor.send({ type: 'chunk', data: Buffer.alloc(UNRESERVED_BYTES) });
  t.same(h.reserveRequests, [], 'small files do not reserve');
  h.actor.send({ type: 'chunk', data: Buffer.alloc(10) });
  t.equal(h.reserveRequests.length, 1);
  const asked = h.reserveRequests[0]!;
  t.ok(asked >= UNRESERVED_BYTES + 10, 'reserves at least what arrived');
  t.same(h.calls, [], 'goes on receiving while the reservation is on its way');
  h.actor.send({ type: 'chunk', data: Buffer.alloc(asked - UNRESERVED_BYTES - 10) });
  t.same(h.calls, [], 'up to all it asked for');
  h.actor.send({ type: 'chunk', data: Buffer.alloc(1) });
  t.same(h.calls, ['pause'], 'past that, waits for the reservation with the body paused');
  t.equal(h.reserveRequests.length, 1, 'one reservation on its way at a time');
  h.resolveReserve(true);
  await new Promise((resolve) => setImmediate(resolve));
  t.same(h.calls, ['pause', 'resume'], 'granted: the body flows again');
  t.equal(h.reserveRequests.length, 2, 'and the byte past it is asked for at once');

  const full = harness();
  full.actor.send({ type: 'chunk', data: Buffer.alloc(UNRESERVED_BYTES + 1) });
  full.actor.send({ type: 'chunk', data: Buffer.alloc(1000) });
  full.resolveReserve(false);
  await new Promise((resolve) => setImmediate(resolve));
  t.same(full.reserveRequests, [full.reserveRequests[0], UNRESERVED_BYTES + 1001], 'after a generous step fails, it asks for exactly what arrived, meanwhile too');
  full.resolveReserve(false);
  const error = (await rejection(full.actor.result)) as ServiceError;
  t.equal(error.messageKey, 'error.teamLimits.maxTeamStorage');
  t.ok(full.writers[0]!.aborted);
});

t.test('without an expected size the reservation grows in doubling steps; with one, it is offered at once', async (t) => {
  const MiB = 1024 * 1024;
  /** Sends `chunks` MiB, each reservation granted in full, or only its step (the team near its limit). */
  const grown = async (h: Harness, chunks: number, grant: 'all' | 'step' = 'all') => {
    for (let i = 0; i < chunks; i++) {
      h.actor.send({ type: 'chunk', data: Buffer.alloc(MiB) });
      h.resolveReserve(grant === 'all' ? true : h.reserveRequests.at(-1)!);
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  const unknown = harness();
  await grown(unknown, 10);
  t.same(unknown.reserveRequests, [MiB, MiB, 2 * MiB, 4 * MiB, 8 * MiB], 'one round trip per doubling');
  t.same(unknown.aheadRequests, [null, null, null, null, null], 'nothing offered ahead');
  t.notOk(unknown.calls.includes('pause'), 'none waited for: each asked for more than the next chunk brought');

  const known = harness({ expectedFileBytes: 10 * MiB + 300 });
  await grown(known, 10);
  t.same(known.reserveRequests, [MiB], 'one reservation');
  t.same(known.aheadRequests, [10 * MiB + 300], 'of the expected size, where the team has room for it');
  t.same(known.calls, [], 'never waited for');

  // Near its limit the team grants only the step: the upload goes on in steps, still offering the rest ahead.
  const tight = harness({ expectedFileBytes: 10 * MiB });
  await grown(tight, 3, 'step');
  t.same(tight.reserveRequests, [MiB, MiB, 2 * MiB], 'the doubling steps');
  t.same(tight.aheadRequests, [10 * MiB, 9 * MiB, 8 * MiB], 'each offering the rest of the expected size');

  const capped = harness({ expectedFileBytes: 10 * MiB, maxFileBytes: 4 * MiB });
  capped.actor.send({ type: 'chunk', data: Buffer.alloc(MiB) });
  t.same(capped.aheadRequests, [null], 'nothing ahead past what the team lets one file be');

  // The expected size is a bound: the file may be smaller, and may fit where the step did not.
  const full = harness({ expectedFileBytes: 10 * MiB });
  full.actor.send({ type: 'chunk', data: Buffer.alloc(UNRESERVED_BYTES + 5) });
  full.resolveReserve(false);
  await new Promise((resolve) => setImmediate(resolve));
  t.same(full.reserveRequests, [MiB, UNRESERVED_BYTES + 5], 'when not even the step fits, it asks for exactly what arrived');
  t.same(full.aheadRequests, [10 * MiB, null], 'and offers nothing ahead');
  full.resolveReserve(true);
  full.actor.send({ type: 'end' });
  full.resolveSniff(allowed);
  t.equal((await full.actor.result).size, UNRESERVED_BYTES + 5, 'the file that fits is committed');
});

t.test('while a reservation offering more ahead is on its way, the file grows into its step, or into all of it where the team had ample room', async (t) => {
  const MiB = 1024 * 1024;
  const h = harness({ expectedFileBytes: 10 * MiB });
  h.actor.send({ type: 'chunk', data: Buffer.alloc(UNRESERVED_BYTES + 1) });
  t.same(h.reserveRequests, [MiB]);
  t.same(h.aheadRequests, [10 * MiB]);
  h.actor.send({ type: 'chunk', data: Buffer.alloc(MiB - UNRESERVED_BYTES - 1) });
  t.same(h.calls, [], 'up to the step');
  h.actor.send({ type: 'chunk', data: Buffer.alloc(1) });
  t.same(h.calls, ['pause'], 'not past it: a team near its limit grants only the step');
  h.resolveReserve(MiB);
  await new Promise((resolve) => setImmediate(resolve));
  t.same(h.calls, ['pause', 'resume'], 'granted the step: the body flows again');
  t.same(h.reserveRequests, [MiB, MiB], 'and the next step asks for the byte past it');

  const roomy = harness({ expectedFileBytes: 10 * MiB, aheadLikelyGranted: true });
  roomy.actor.send({ type: 'chunk', data: Buffer.alloc(UNRESERVED_BYTES + 1) });
  t.same(roomy.aheadRequests, [10 * MiB]);
  roomy.actor.send({ type: 'chunk', data: Buffer.alloc(10 * MiB - UNRESERVED_BYTES - 1) });
  t.same(roomy.calls, [], 'a team with ample room: into all it offers ahead');
  roomy.actor.send({ type: 'chunk', data: Buffer.alloc(1) });
  t.same(roomy.calls, ['pause'], 'and no further');
  roomy.resolveReserve(true);
  await new Promise((resolve) => setImmediate(resolve));
  t.same(roomy.calls, ['pause', 'resume']);
  t.equal(roomy.reserveRequests.length, 2, 'the byte past it asked for next');

  // The team filled meanwhile: only the step is granted, and the file, grown past it, asks for the rest.
  const stale = harness({ expectedFileBytes: 10 * MiB, aheadLikelyGranted: true });
  const refused = rejection(stale.actor.result);
  stale.actor.send({ type: 'chunk', data: Buffer.alloc(UNRESERVED_BYTES + 1) });
  stale.actor.send({ type: 'chunk', data: Buffer.alloc(3 * MiB - UNRESERVED_BYTES - 1) });
  t.same(stale.calls, [], 'the file grows past the step');
  stale.resolveReserve(MiB);
  await new Promise((resolve) => setImmediate(resolve));
  t.same(stale.reserveRequests, [MiB, 2 * MiB], 'granted only the step, it asks for exactly what arrived past it');
  stale.resolveReserve(false);
  t.equal(((await refused) as ServiceError).messageKey, 'error.teamLimits.maxTeamStorage', 'refused: 402');
  t.ok(stale.writers[0]!.aborted, 'and what was written is removed');
});

t.test('a file whose body declares it small is not reserved at all; one of unknown or larger size is', async (t) => {
  const small = harness({ expectedFileBytes: UNRESERVED_DECLARED_BYTES });
  small.actor.send({ type: 'chunk', data: Buffer.alloc(UNRESERVED_DECLARED_BYTES) });
  small.actor.send({ type: 'end' });
  small.resolveSniff(allowed);
  t.equal((await small.actor.result).size, UNRESERVED_DECLARED_BYTES, 'committed');
  t.same(small.reserveRequests, [], 'without a reservation');
  t.notOk(small.calls.includes('pause'), 'and without a pause');

  const unknown = harness();
  unknown.actor.send({ type: 'chunk', data: Buffer.alloc(UNRESERVED_BYTES + 1) });
  t.equal(unknown.reserveRequests.length, 1, 'a body of unknown length reserves past UNRESERVED_BYTES');

  const larger = harness({ expectedFileBytes: UNRESERVED_DECLARED_BYTES + 1 });
  larger.actor.send({ type: 'chunk', data: Buffer.alloc(UNRESERVED_BYTES + 1) });
  t.equal(larger.reserveRequests.length, 1, 'a body that may carry more reserves past UNRESERVED_BYTES');

  // The declared size bounds the file; should more arrive anyway, it is reserved like any other.
  const understated = harness({ expectedFileBytes: 1024 });
  understated.actor.send({ type: 'chunk', data: Buffer.alloc(UNRESERVED_DECLARED_BYTES + 1) });
  t.equal(understated.reserveRequests.length, 1, 'past UNRESERVED_DECLARED_BYTES it reserves');
});

t.test('the commit waits for an outstanding reservation', async (t) => {
  const h = harness();
  h.actor.send({ type: 'chunk', data: Buffer.alloc(UNRESERVED_BYTES + 1) });
  h.actor.send({ type: 'end' });
  h.resolveSniff(allowed);
  await new Promise((resolve) => setImmediate(resolve));
  t.notOk(h.calls.includes('commit'));
  h.resolveReserve(true);
  const received = await h.actor.result;
  t.equal(received.size, UNRESERVED_BYTES + 1);
});

t.test('a failing commit aborts the write and releases', async (t) => {
  const h = harness({ commit: async () => { throw new Error('db down'); } });
  h.actor.send({ type: 'chunk', data: Buffer.from('x') });
  h.actor.send({ type: 'end' });
  h.resolveSniff(allowed);
  t.match(await rejection(h.actor.result), { message: 'db down' });
  t.ok(h.writers[0]!.aborted);
  t.ok(h.calls.includes('release'));
});

t.test('a body without a file is a 400', async (t) => {
  const h = harness({ first: null });
  h.actor.send({ type: 'chunk', data: Buffer.from('x') });
  h.actor.send({ type: 'end' });
  const error = (await rejection(h.actor.result)) as ServiceError;
  t.equal(error.status, 400);
});

t.test('a later part named file replaces an earlier file part of another name', async (t) => {
  const h = harness({ first: { fieldName: 'attachment', fileName: 'first.bin', declaredType: null } });
  h.actor.send({ type: 'chunk', data: Buffer.from('first') });
  h.parser().startFile({ fieldName: 'file', fileName: 'second.bin', declaredType: null });
  h.actor.send({ type: 'chunk', data: Buffer.from('second!') });
  h.parser().startFile({ fieldName: 'other', fileName: 'third.bin', declaredType: null });
  h.actor.send({ type: 'chunk', data: Buffer.from('ignored') });
  h.actor.send({ type: 'end' });
  h.resolveSniff(allowed);
  const received = await h.actor.result;
  t.equal(received.file.fileName, 'second.bin');
  t.equal(received.size, 7);
  t.ok(h.writers[0]!.aborted, 'the first file\'s write is abandoned');
  t.same(Buffer.concat(h.writers[1]!.chunks).toString(), 'second!');
  t.equal(h.writers.length, 2, 'the third part is skipped');
});

t.test('a blocked name or declared type is refused with 415 when the file starts, before any storage is opened', async (t) => {
  const cases: Array<[string, HarnessOptions]> = [
    ['a part named file called .exe', { first: { fieldName: 'file', fileName: 'setup.exe', declaredType: 'application/octet-stream' } }],
    ['a part named file declared text/html', { first: { fieldName: 'file', fileName: 'page.txt', declaredType: 'text/html' } }],
    ['the JSON file with fileName before it', { first: { fieldName: null, fileName: 'tool.bat', declaredType: null } }],
    ['the JSON file as a data URI of SVG', { first: { fieldName: null, fileName: null, declaredType: 'image/svg+xml' } }],
    ['the query fileName', { first: { fieldName: 'upload', fileName: 'fine.png', declaredType: 'image/png' }, options: { public: null, fileName: 'x.js', folderPath: null, folderId: null, tags: [], stripMetadata: null } }],
  ];
  for (const [label, options] of cases) {
    const h = harness(options);
    h.actor.send({ type: 'chunk', data: Buffer.alloc(1000) });
    if (options.first?.fieldName === 'upload') h.actor.send({ type: 'end' });
    const error = (await rejection(h.actor.result)) as ServiceError;
    t.equal(error.status, 415, `${label}: 415`);
    t.equal(error.messageKey, 'error.unsupportedMediaType', label);
    t.equal(h.writers.length, 0, `${label}: no storage writer was opened`);
    t.same(h.reserveRequests, [], `${label}: nothing reserved`);
    t.ok(h.parser().destroyed, `${label}: the parser stopped`);
  }
  const invalid = harness({ first: { fieldName: 'file', fileName: 'bad\u0000name.png', declaredType: null } });
  invalid.actor.send({ type: 'chunk', data: Buffer.alloc(10) });
  const error = (await rejection(invalid.actor.result)) as ServiceError;
  t.equal(error.status, 400, 'an invalid part file name is a 400 at once');
  t.equal(invalid.writers.length, 0);
});

t.test('a blocked part of another name skips its bytes, and a later part named file can still replace it', async (t) => {
  const replaced = harness({ first: { fieldName: 'attachment', fileName: 'first.exe', declaredType: null } });
  replaced.actor.send({ type: 'chunk', data: Buffer.from('MZ...') });
  t.equal(replaced.writers.length, 0, 'the blocked part is not stored');
  replaced.parser().startFile({ fieldName: 'file', fileName: 'second.png', declaredType: null });
  replaced.actor.send({ type: 'chunk', data: Buffer.from('second') });
  replaced.actor.send({ type: 'end' });
  replaced.resolveSniff(allowed);
  const received = await replaced.actor.result;
  t.equal(received.file.fileName, 'second.png');
  t.equal(replaced.writers.length, 1);
  t.equal(Buffer.concat(replaced.writers[0]!.chunks).toString(), 'second');

  const kept = harness({ first: { fieldName: 'attachment', fileName: 'first.exe', declaredType: null } });
  kept.actor.send({ type: 'chunk', data: Buffer.from('MZ...') });
  kept.parser().startFile({ fieldName: 'other', fileName: 'third.png', declaredType: null });
  kept.actor.send({ type: 'end' });
  const error = (await rejection(kept.actor.result)) as ServiceError;
  t.equal(error.status, 415, 'still the file when the body ends: 415');
  t.equal(kept.writers.length, 0, 'nothing was ever stored');
});
