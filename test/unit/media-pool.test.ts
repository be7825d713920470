import { randomBytes } from 'node:crypto';
import t from 'tap';
import { hashBlock, loadXxhash } from '../../src/uploads/hashing/content-hash.ts';
import { sniffContent } from '../../src/uploads/sniffing/sniff-content.ts';
import { MediaPool } from '../../src/pool/media-pool.ts';

const MiB = 1024 * 1024;

/** Random bytes in an ArrayBuffer of exactly their size, at offset 0 (eligible for transfer). */
function ownedBlock(size: number): Buffer {
  const block = Buffer.allocUnsafeSlow(size);
  randomBytes(size).copy(block);
  return block;
}

t.test('MediaPool with 2 threads', async (t) => {
  const api = await loadXxhash();
  const pool = new MediaPool({ threads: 2 });
  let closed = false;
  t.teardown(async () => {
    if (!closed) await pool.close();
  });

  t.test('hashBlocks equals inline hashBlock, in order', async (t) => {
    const blocks = [ownedBlock(MiB), ownedBlock(MiB), ownedBlock(MiB), ownedBlock(12_345), ownedBlock(0)];
    const expected = blocks.map((block) => hashBlock(api, block));
    t.same(await pool.hashBlocks(blocks), expected);
    t.same(await pool.hashBlocks([]), []);
  });

  t.test('many concurrent tasks over both threads', async (t) => {
    const batches = Array.from({ length: 16 }, () => [ownedBlock(64 * 1024), ownedBlock(64 * 1024)]);
    const expected = batches.map((batch) => batch.map((block) => hashBlock(api, block)));
    t.same(await Promise.all(batches.map((batch) => pool.hashBlocks(batch))), expected);
  });

  t.test('transfer: only blocks owning their whole ArrayBuffer are detached', async (t) => {
    const owned = ownedBlock(MiB);
    const large = randomBytes(3 * MiB);
    const sliceAtOffset = large.subarray(MiB, 2 * MiB); // a view into a larger buffer
    const sliceAtStart = large.subarray(0, MiB); // offset 0, but shorter than its ArrayBuffer
    const pooled = Buffer.from('small buffers live in Node\'s shared pool');
    const shared = Buffer.from(new SharedArrayBuffer(4096));
    randomBytes(4096).copy(shared);
    const twice = ownedBlock(1024); // the same ArrayBuffer twice in one call
    t.ok(pooled.buffer.byteLength > pooled.length, 'the small buffer is a slice of the pool');

    const blocks = [owned, sliceAtOffset, sliceAtStart, pooled, shared, twice, twice];
    const expected = blocks.map((block) => hashBlock(api, block));
    const copies = blocks.map((block) => Buffer.from(block));
    t.same(await pool.hashBlocks(blocks), expected);

    t.equal(owned.length, 0, 'the owned block was transferred: detached');
    t.equal(owned.buffer.byteLength, 0);
    t.equal(twice.length, 0, 'a buffer given twice is transferred once');
    t.ok(sliceAtOffset.equals(copies[1]!), 'a slice at an offset was copied, intact');
    t.ok(sliceAtStart.equals(copies[2]!), 'a slice shorter than its ArrayBuffer was copied, intact');
    t.equal(large.length, 3 * MiB);
    t.ok(pooled.equals(copies[3]!), 'a pool slice was copied, intact');
    t.equal(Buffer.from('still usable').toString(), 'still usable', "Node's pool still works");
    t.ok(shared.equals(copies[4]!), 'a SharedArrayBuffer view was copied, intact');
  });

  t.test('transfer: false copies everything', async (t) => {
    const owned = ownedBlock(MiB);
    const copy = Buffer.from(owned);
    t.same(await pool.hashBlocks([owned], { transfer: false }), [hashBlock(api, copy)]);
    t.equal(owned.length, MiB, 'not detached');
    t.ok(owned.equals(copy));
  });

  t.test('sniff equals inline sniffContent; the head stays intact', async (t) => {
    const heads = [
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]),
      Buffer.from('<!DOCTYPE html><p>x'),
      Buffer.from('#!/bin/sh\n'),
      Buffer.from('2024-05-01 INFO started\n'),
      Buffer.from('{"a": [1, 2'),
      Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]),
      ownedBlock(4096), // owns its ArrayBuffer: must still not be detached
      Buffer.concat([Buffer.alloc(4096, 'a'), Buffer.from([0])]), // only the first 4096 bytes count
      Buffer.alloc(0),
    ];
    for (const head of heads) {
      const before = Buffer.from(head);
      t.same(await pool.sniff(head), sniffContent(before));
      t.ok(head.equals(before), 'head unchanged, not detached');
    }
  });

  t.test('utilization is a share', (t) => {
    t.ok(pool.utilization >= 0 && pool.utilization <= 1, `utilization ${pool.utilization}`);
    t.end();
  });

  t.test('the pool closes cleanly', async (t) => {
    const running = t.rejects(pool.hashBlocks([ownedBlock(MiB)]), /Terminating/, 'a task still running when the pool closes is rejected');
    await pool.close();
    closed = true;
    await running;
    const block = ownedBlock(16);
    await t.rejects(pool.hashBlocks([block]), /closed/, 'no tasks after close');
    t.equal(block.length, 16, 'a refused block is not detached');
    await t.rejects(pool.sniff(Buffer.from('x')), /closed/);
    await pool.close();
    t.pass('closing again is harmless');
  });
});

t.test('the constructor wants a positive integer of threads', (t) => {
  t.throws(() => new MediaPool({ threads: 0 }), RangeError);
  t.throws(() => new MediaPool({ threads: 1.5 }), RangeError);
  t.end();
});
