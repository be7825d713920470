import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import type { Test } from 'tap';
import { TempFileSink } from '../../src/storage/fs/temp-file-sink.ts';

const bytes = (fill: string, length: number): Buffer => Buffer.alloc(length, fill);

/** A sink whose file is open (a first byte 'o' has reached it), and the count of its 'drain' events. */
async function openSink(t: Test, name: string, highWaterMark: number): Promise<{ file: string; sink: TempFileSink; drains: () => number }> {
  const file = join(t.testdir(), name);
  const sink = new TempFileSink(file, highWaterMark);
  sink.write(bytes('o', 1));
  await sink.flushed();
  if (readFileSync(file).length !== 1) throw new Error('the first byte did not reach the file');
  let drained = 0;
  sink.on('drain', () => drained++);
  return { file, sink, drains: () => drained };
}

/** The descriptors of this process open on `file`. */
function descriptorsOn(file: string): number {
  return readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === file;
    } catch {
      return false; // the directory listing's own descriptor, gone by now
    }
  }).length;
}

t.test('the file is closed once it is ended or destroyed', async (t) => {
  const ended = await openSink(t, 'ended.part', 1024);
  t.equal(descriptorsOn(ended.file), 1, 'open while in use');
  await ended.sink.end(true);
  t.equal(descriptorsOn(ended.file), 0, 'closed when end() resolves');

  const destroyed = await openSink(t, 'destroyed.part', 1024);
  const ending = destroyed.sink.end(true);
  await destroyed.sink.destroy();
  t.equal(descriptorsOn(destroyed.file), 0, 'closed when destroy() resolves');
  await t.rejects(ending, /closed before it was ended/, 'the end() it cut short fails, without touching the closed descriptor');
  t.equal(readFileSync(destroyed.file).toString(), 'o');

  const syncing = await openSink(t, 'syncing.part', 1024);
  const ended2 = syncing.sink.end(true);
  await new Promise((resolve) => setImmediate(resolve)); // end() has checked and handed its fsync to the pool
  await syncing.sink.destroy();
  await ended2;
  t.equal(descriptorsOn(syncing.file), 0, 'destroyed while its fsync runs: closed after the fsync, which succeeds');

  const early = new TempFileSink(join(t.testdir(), 'early.part'), 1024);
  await early.destroy();
  t.equal(descriptorsOn(join(t.testdir(), 'early.part')), 0, 'destroyed before its open completed: closed once it opens');
});

t.test('a chunk written while the queue is full is written through at once, at its offset', async (t) => {
  const { file, sink, drains } = await openSink(t, 'through.part', 8);
  t.equal(sink.write(bytes('a', 8)), false, 'the queue is at its mark: the caller is told to wait');
  sink.write(bytes('b', 4));
  t.equal(readFileSync(file).subarray(1, 13).toString(), `${'a'.repeat(8)}bbbb`, 'the queue and the chunk are in the file as soon as write() returns');
  await sink.flushed();
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(drains(), 1, "the caller told to wait hears 'drain' once, with no further write");
  sink.write(bytes('c', 3));
  await sink.end(true);
  t.equal(readFileSync(file).toString(), `o${'a'.repeat(8)}bbbb${'c'.repeat(3)}`, 'every byte in the order written');
});

t.test('while the pool writes a batch, later chunks past the mark go through behind it', async (t) => {
  const { file, sink, drains } = await openSink(t, 'behind.part', 8);
  sink.write(bytes('a', 8));
  await Promise.resolve(); // the pump takes the batch to the pool
  await Promise.resolve();
  t.equal(sink.write(bytes('b', 4)), false, 'the pool is still writing the first chunk: still behind');
  t.equal(readFileSync(file).subarray(9, 13).toString(), 'bbbb', 'the chunk went through at its offset, past the batch in flight');
  await sink.end(true);
  t.equal(readFileSync(file).toString(), `o${'a'.repeat(8)}bbbb`);
  t.equal(drains(), 1, "'drain' once the pool's write ended");
});

t.test('many writes past the mark land in order', async (t) => {
  const { file, sink } = await openSink(t, 'order.part', 4);
  const written: string[] = [];
  for (let i = 0; i < 20; i++) {
    const chunk = bytes(String.fromCharCode(97 + i), 3);
    written.push(chunk.toString());
    sink.write(chunk);
  }
  await sink.end(false);
  t.equal(readFileSync(file).toString(), `o${written.join('')}`);
});

t.test('a transient chunk is written through once the file is open, and copied before', async (t) => {
  const file = join(t.testdir(), 'transient.part');
  const sink = new TempFileSink(file, 1024);
  const early = bytes('e', 4);
  sink.writeTransient(early);
  early.fill('x'); // the caller reuses its memory once the call returns
  await sink.flushed();
  t.equal(readFileSync(file).toString(), 'eeee', 'before the file was open: a copy was queued');
  const late = bytes('l', 4);
  sink.writeTransient(late);
  t.equal(readFileSync(file).toString(), 'eeeellll', 'once open: in the file when the call returns');
  late.fill('x');
  await sink.end(true);
  t.equal(readFileSync(file).toString(), 'eeeellll');
});

// A real write failure: the child runs with a file size limit (RLIMIT_FSIZE), so that the
// write through past it fails with EFBIG (SIGXFSZ is caught, so the write fails instead of ending the process).
t.test('a write through that fails fails the sink: its error listeners hear it and end() rejects', (t) => {
  const dir = t.testdir();
  const script = `
    process.on('SIGXFSZ', () => {});
    import { TempFileSink } from ${JSON.stringify(new URL('../../src/storage/fs/temp-file-sink.ts', import.meta.url).href)};
    const sink = new TempFileSink(${JSON.stringify(join(dir, 'big.part'))}, 1024);
    const heard = [];
    sink.onError((error) => heard.push(error.code));
    sink.write(Buffer.alloc(1));
    await sink.flushed();
    sink.write(Buffer.alloc(2048));
    sink.write(Buffer.alloc(8192));
    const ended = await sink.end(true).then(() => 'resolved', (error) => error.code);
    console.log(JSON.stringify({ heard, ended }));
  `;
  const child = spawnSync('bash', ['-c', `ulimit -f 4 && exec "${process.execPath}" --input-type=module -e "$0"`, script], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' }, // the test runner's hooks write their own files at exit, past the limit
  });
  t.same([child.status, child.signal], [0, null], `the child ran to its end: ${child.stderr}`);
  const result = JSON.parse(child.stdout.trim().split('\n').at(-1) ?? '{}') as { heard: string[]; ended: string };
  t.same(result.heard, ['EFBIG'], 'the error listener hears the failure once');
  t.equal(result.ended, 'EFBIG', 'end() rejects with it');
  t.end();
});
