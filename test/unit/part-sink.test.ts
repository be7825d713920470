import { randomBytes } from 'node:crypto';
import t from 'tap';
import { firstBufferClass, PartBufferPool, PartSink } from '../../src/storage/s3/part-sink.ts';

// The s3 writer's part buffers (the writer against a real S3 server is in
// test/storage/object-store.test.ts): bytes copied once into reused buffers, parts cut only when
// a byte needs the room, write() false while the regular buffers are full or in flight, a spare
// buffer for what arrives after that, 'drain' once a write would not need it.

const partSize = 1024;

interface SentPart {
  partNumber: number;
  bytes: Buffer;
  buffer: ArrayBufferLike;
  answer(): void;
  refuse(error: Error): void;
}

function harness(options: { partsInFlight?: number; firstBufferSize?: number; pool?: PartBufferPool } = {}) {
  const sent: SentPart[] = [];
  let drains = 0;
  const sink = new PartSink({
    partSize,
    partsInFlight: options.partsInFlight ?? 1,
    pool: options.pool ?? new PartBufferPool(partSize, 2),
    ...(options.firstBufferSize === undefined ? {} : { firstBufferSize: options.firstBufferSize }),
    sendPart: (partNumber, body) =>
      new Promise<void>((resolve, reject) => {
        // What S3 receives: a copy taken when the part is sent, as the request would.
        sent.push({ partNumber, bytes: Buffer.from(body), buffer: body.buffer, answer: resolve, refuse: reject });
      }),
  });
  sink.on('drain', () => drains++);
  return { sink, sent, drains: () => drains };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

/** Answers every part sent so far, `rounds` times over, letting the sink send the next between rounds. */
async function answerAll(sent: SentPart[], rounds: number): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    await settle();
    for (const part of sent) part.answer();
  }
}

t.test('a body that fits its first buffer comes back whole, never sent', async (t) => {
  const { sink, sent } = harness({ firstBufferSize: 300 });
  const data = randomBytes(300);
  t.equal(sink.write(data.subarray(0, 100)), true);
  const scratch = Buffer.from(data.subarray(100));
  t.equal(sink.writeTransient(scratch), true);
  scratch.fill(0); // the caller reuses a transient chunk's memory at once
  const gathered = await sink.end();
  t.equal(gathered.kind, 'whole');
  t.ok(gathered.kind === 'whole' && gathered.body.equals(data), 'the bytes as written');
  t.equal(sent.length, 0, 'no part was sent');
});

t.test('an empty body is whole and empty', async (t) => {
  const { sink } = harness();
  const gathered = await sink.end();
  t.same(gathered.kind === 'whole' && gathered.body.length, 0);
});

t.test('exactly one part of bytes is still one whole body: a part is cut only when a byte needs the room', async (t) => {
  const { sink, sent } = harness();
  sink.write(randomBytes(partSize));
  const gathered = await sink.end();
  t.equal(gathered.kind, 'whole');
  t.equal(sent.length, 0);
});

t.test('a body larger than announced grows into a part buffer and goes on in parts', async (t) => {
  const { sink, sent } = harness({ firstBufferSize: 100 });
  const received: SentPart[] = [];
  const data = randomBytes(partSize * 2 + 10);
  for (let offset = 0; offset < data.length; offset += 70) {
    const scratch = Buffer.from(data.subarray(offset, offset + 70));
    sink.writeTransient(scratch);
    scratch.fill(0);
    for (const part of sent.splice(0)) {
      received.push(part);
      part.answer();
    }
    await settle();
  }
  const ending = sink.end();
  await settle();
  for (const part of sent.splice(0)) {
    received.push(part);
    part.answer();
  }
  t.same(await ending, { kind: 'parts', count: 3 });
  t.same(
    received.map((part) => [part.partNumber, part.bytes.length]),
    [
      [1, partSize],
      [2, partSize],
      [3, 10],
    ],
    'every part but the last is a whole part',
  );
  t.ok(Buffer.concat(received.map((part) => part.bytes)).equals(data), 'the parts hold the bytes as written');
});

t.test('write() asks to wait while every buffer is full or in flight; drain once a part is answered', async (t) => {
  const { sink, sent, drains } = harness({ partsInFlight: 1 });
  const data = randomBytes(partSize * 4);
  t.equal(sink.write(data.subarray(0, partSize)), true, 'the first buffer filled: another is free');
  t.equal(sink.write(data.subarray(partSize, 2 * partSize)), false, 'the first part is in flight and the second buffer full');
  t.equal(sent.length, 1, 'part 1 was sent when the second buffer needed the room');
  t.ok(sink.takesWhileBehind(), 'the spare buffer has room');
  t.equal(sink.write(data.subarray(2 * partSize, 3 * partSize)), false, 'still behind: this chunk went into the spare buffer');
  t.equal(sent.length, 1, 'one part in flight at a time');
  sent[0]!.answer();
  await settle();
  t.equal(sent.length, 2, 'part 2 is sent once part 1 is answered');
  t.equal(drains(), 0, 'no drain while a write would need the spare buffer');
  sent[1]!.answer();
  await settle();
  t.equal(drains(), 1, 'drain once part 2 is answered: a buffer is free');
  t.equal(sent.length, 2, 'the full buffer is cut only when a byte needs its room');
  t.equal(sink.write(data.subarray(3 * partSize)), false, 'part 3 in flight, the last buffer full');
  const ending = sink.end();
  await answerAll(sent, 5);
  t.same(await ending, { kind: 'parts', count: 4 });
  t.ok(Buffer.concat(sent.map((part) => part.bytes)).equals(data), 'parts in order, bytes as written');
  t.equal(new Set(sent.map((part) => part.buffer)).size, 3, 'four parts out of three buffers');
});

t.test('drain follows once the backlog has moved into buffers', async (t) => {
  const { sink, sent, drains } = harness({ partsInFlight: 2 });
  t.equal(sink.write(randomBytes(partSize * 3 - 1)), true, 'three buffers: two parts in flight, the third with room');
  t.equal(sent.length, 2);
  t.equal(sink.write(randomBytes(10)), false, 'the third buffer full, nine bytes in the spare');
  sent[0]!.answer();
  await settle();
  t.equal(drains(), 1, 'drain once a buffer is free and the backlog is in it');
});

t.test('past the spare buffer, bytes wait in the backlog until a part is answered', async (t) => {
  const { sink, sent, drains } = harness({ partsInFlight: 1 });
  const data = randomBytes(partSize * 3 + 100);
  t.equal(sink.write(data.subarray(0, 2 * partSize)), false, 'part 1 in flight, the second buffer full');
  t.equal(sink.write(data.subarray(2 * partSize, 3 * partSize)), false, 'into the spare');
  t.notOk(sink.takesWhileBehind(), 'the spare is full');
  const scratch = Buffer.from(data.subarray(3 * partSize));
  t.equal(sink.writeTransient(scratch), false, 'a transient chunk without room is copied to the backlog');
  scratch.fill(0);
  t.notOk(sink.takesWhileBehind(), 'nothing more while the backlog waits');
  const ending = sink.end();
  await answerAll(sent, 6);
  t.same(await ending, { kind: 'parts', count: 4 });
  t.ok(Buffer.concat(sent.map((part) => part.bytes)).equals(data), 'the bytes as written, the backlog last');
  t.equal(drains(), 0, 'no drain once the body has ended');
});

t.test('the pool hands a writer’s answered buffers to the next writer', async (t) => {
  const pool = new PartBufferPool(partSize, 2);
  const first = harness({ pool });
  first.sink.write(randomBytes(partSize * 2 + 1));
  const ending = first.sink.end();
  await answerAll(first.sent, 4);
  await ending;
  const second = harness({ pool });
  second.sink.write(randomBytes(partSize + 1));
  t.ok(
    first.sent.some((part) => part.buffer === second.sent[0]!.buffer),
    'the second writer’s first part went out of a buffer the first writer gave back',
  );
  t.equal(pool.take(partSize * 2).length, partSize * 2, 'a buffer of another size is made, not taken from the pool');
});

t.test('a whole body’s buffer goes back to the pool once released, for the next body of its size class', async (t) => {
  const pool = new PartBufferPool(partSize, 2);
  const gather = async (bytes: number, options: { release?: boolean; stop?: boolean } = {}) => {
    const { sink } = harness({ pool, firstBufferSize: bytes });
    const data = randomBytes(bytes);
    sink.write(data);
    if (options.stop) {
      sink.stop(new Error('aborted'));
      return null;
    }
    const gathered = await sink.end();
    if (gathered.kind !== 'whole') throw new Error('expected a whole body');
    t.ok(gathered.body.equals(data), `the ${bytes} bytes as written`);
    if (options.release !== false) sink.release();
    return gathered.body.buffer;
  };
  const first = await gather(300);
  t.equal(await gather(310), first, 'a body of the same class (320 bytes) reuses the released buffer');
  t.not(await gather(200), first, 'a body of another class gets a buffer of its own');
  const kept = await gather(300, { release: false });
  t.equal(kept, first, 'the released buffer again');
  t.not(await gather(300), first, 'a body whose buffer was not released (its PutObject may still read it) is not reused');
});

t.test('size classes: at most an eighth over the announced size, and a class is its own class', async (t) => {
  for (const bytes of [1, 7, 8, 9, 100, 1000, 256 * 1024, 2 * 1024 * 1024, 2 * 1024 * 1024 + 300, 5 * 1024 * 1024 - 1]) {
    const size = firstBufferClass(bytes);
    t.ok(size >= bytes && size <= Math.ceil(bytes * 1.125), `${bytes} → ${size}`);
    t.equal(firstBufferClass(size), size);
  }
  t.equal(firstBufferClass(2 * 1024 * 1024), 2 * 1024 * 1024, 'a power of two is a class');
});

t.test('a refused part stops the sink: end() rejects, later writes are dropped', async (t) => {
  const { sink, sent } = harness();
  sink.write(randomBytes(partSize + 1));
  const ending = sink.end();
  await settle();
  sent[0]!.refuse(new Error('S3 said no'));
  await t.rejects(ending, /S3 said no/);
  t.equal(sink.write(randomBytes(10)), true, 'dropped');
  await t.rejects(sink.end(), /S3 said no/);
});

t.test('stop() rejects a waiting end() and drops the backlog', async (t) => {
  const { sink, sent } = harness();
  sink.write(randomBytes(partSize * 3));
  const ending = sink.end();
  sink.stop(new Error('aborted'));
  await t.rejects(ending, /aborted/);
  sent[0]!.answer();
  await settle();
  t.equal(sent.length, 1, 'nothing more is sent after stop()');
});
