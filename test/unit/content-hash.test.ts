import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import xxhash from 'xxhash-wasm';
import { BlockSplitter, combineBlockHashes, HASH_BLOCK_SIZE, hashBlock, hashContent, loadXxhash } from '../../src/uploads/hashing/content-hash.ts';

const MiB = 1024 * 1024;

t.test('content hash', async (t) => {
  const api = await loadXxhash();
  // An independent instance, so the manual definition does not go through the module under test.
  const reference = await xxhash();

  /** The definition, spelled out: 1 MiB blocks, xxh64 each (streaming API), 8 bytes big-endian, xxh64 of the concatenation. */
  function manualHash(content: Uint8Array): string {
    const blockHashes: bigint[] = [];
    for (let offset = 0; offset < content.length; offset += MiB) {
      blockHashes.push(reference.create64(0n).update(content.subarray(offset, offset + MiB)).digest());
    }
    const concatenated = Buffer.alloc(blockHashes.length * 8);
    blockHashes.forEach((hash, index) => concatenated.writeBigUInt64BE(hash, index * 8));
    return reference.h64Raw(concatenated, 0n).toString(16).padStart(16, '0');
  }

  t.test('constants and loading', async (t) => {
    t.equal(HASH_BLOCK_SIZE, 1_048_576);
    t.equal(await loadXxhash(), api, 'the instance is memoised');
  });

  t.test('hashContent matches the definition', (t) => {
    const cases: [string, Uint8Array][] = [
      ['empty', new Uint8Array(0)],
      ['1 byte', Uint8Array.of(0x61)],
      ['exactly 1 MiB', randomBytes(MiB)],
      ['1 MiB + 1', randomBytes(MiB + 1)],
      ['3.5 MiB', randomBytes(3.5 * MiB)],
    ];
    for (const [name, content] of cases) {
      const hash = hashContent(api, content);
      t.match(hash, /^[0-9a-f]{16}$/, `${name}: 16 lowercase hex digits`);
      t.equal(hash, manualHash(content), name);
    }
    t.equal(hashContent(api, new Uint8Array(0)), 'ef46db3751d8e999', 'empty content: zero blocks, xxh64 of nothing');
    t.equal(hashContent(api, new Uint8Array(0)), reference.h64ToString(''), 'xxh64 of the empty string');
    const one = Uint8Array.of(0x61);
    const blockHash = Buffer.alloc(8);
    blockHash.writeBigUInt64BE(reference.h64Raw(one, 0n));
    t.equal(hashContent(api, one), reference.h64Raw(blockHash, 0n).toString(16).padStart(16, '0'), '1 byte: one block');
    t.not(hashContent(api, one), reference.h64ToString('a'), 'not the plain xxh64 of the content');
    t.end();
  });

  t.test('hashBlock and combineBlockHashes compose to hashContent, zero-padded', (t) => {
    const content = randomBytes(2 * MiB + 12345);
    const hashes = [0, MiB, 2 * MiB].map((offset) => hashBlock(api, content.subarray(offset, offset + MiB)));
    t.equal(combineBlockHashes(api, hashes), hashContent(api, content));
    t.equal(combineBlockHashes(api, []), 'ef46db3751d8e999');
    // Find an input whose combined hash has a leading zero nibble, to check the padding.
    let padded: string | undefined;
    for (let seed = 0n; seed < 4096n && !padded; seed++) {
      const hash = combineBlockHashes(api, [seed]);
      if (hash.startsWith('0')) padded = hash;
    }
    t.ok(padded, 'some combined hash starts with 0');
    t.equal(padded?.length, 16);
    t.end();
  });

  t.test('BlockSplitter', async (t) => {
    const content = randomBytes(3.5 * MiB + 17);
    const expected = [0, 1, 2, 3].map((index) => content.subarray(index * MiB, (index + 1) * MiB));

    function split(t: Test, chunkSizes: () => number): Buffer[] {
      const splitter = new BlockSplitter();
      const blocks: Buffer[] = [];
      for (let offset = 0; offset < content.length; ) {
        const size = Math.min(chunkSizes(), content.length - offset);
        // A copy per chunk, as from a socket.
        blocks.push(...splitter.push(Buffer.from(content.subarray(offset, offset + size))));
        offset += size;
      }
      const last = splitter.flush();
      if (last) blocks.push(last);
      t.equal(splitter.flush(), null, 'flush resets');
      return blocks;
    }

    const sizes: [string, () => number][] = [
      ['1', () => 1],
      ['7', () => 7],
      ['65536', () => 65536],
      ['1 MiB', () => MiB],
      ['1 MiB + 3', () => MiB + 3],
      ['random', () => 1 + Math.floor(Math.random() * 300_000)],
      ['random, some empty', () => (Math.random() < 0.2 ? 0 : Math.floor(Math.random() * 2 * MiB))],
    ];
    for (const [name, chunkSize] of sizes) {
      t.test(`chunks of ${name}`, (t) => {
        const blocks = split(t, chunkSize);
        t.equal(blocks.length, 4);
        for (let index = 0; index < 4; index++) {
          t.ok(blocks[index]!.equals(expected[index]!), `block ${index}`);
        }
        t.equal(combineBlockHashes(api, blocks.map((block) => hashBlock(api, block))), hashContent(api, content));
        t.end();
      });
    }

    t.test('aligned 1 MiB chunks come back as-is, not copied', (t) => {
      const splitter = new BlockSplitter();
      const chunks = [randomBytes(MiB), randomBytes(MiB)];
      for (const chunk of chunks) {
        const blocks = splitter.push(chunk);
        t.equal(blocks.length, 1);
        t.equal(blocks[0], chunk, 'the same Buffer');
        t.equal(blocks[0]!.buffer, chunk.buffer, 'the same ArrayBuffer');
      }
      t.equal(splitter.flush(), null);
      t.end();
    });

    t.test('blocks inside larger chunks are views of them', (t) => {
      const splitter = new BlockSplitter();
      const chunk = randomBytes(2 * MiB + 5);
      const blocks = splitter.push(chunk);
      t.equal(blocks.length, 2);
      t.equal(blocks[0]!.buffer, chunk.buffer);
      t.equal(blocks[1]!.buffer, chunk.buffer);
      t.equal(blocks[1]!.byteOffset, chunk.byteOffset + MiB);
      const last = splitter.flush()!;
      t.ok(last.equals(chunk.subarray(2 * MiB)));
      t.end();
    });

    t.test('assembled blocks own a fresh 1 MiB ArrayBuffer each', (t) => {
      const splitter = new BlockSplitter();
      const half = MiB / 2;
      const blocks = [randomBytes(half), randomBytes(MiB), randomBytes(MiB), randomBytes(half)].flatMap((chunk) => splitter.push(chunk));
      t.equal(blocks.length, 3);
      for (const block of blocks) {
        t.equal(block.byteOffset, 0);
        t.equal(block.buffer.byteLength, MiB);
      }
      t.equal(new Set(blocks.map((block) => block.buffer)).size, 3, 'no assembly buffer is reused');
      t.equal(splitter.flush(), null);
      t.end();
    });
  });
});
