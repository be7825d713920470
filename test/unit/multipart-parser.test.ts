import t from 'tap';
import type { Test } from 'tap';
import { MultipartParser, DEFAULT_MULTIPART_LIMITS, multipartBoundary } from '../../src/upload/parsers/multipart-parser.ts';
import type { MultipartEvents, MultipartFileInfo, MultipartLimits, MultipartSummary } from '../../src/upload/parsers/multipart-parser.ts';
import { ParseError } from '../../src/upload/parsers/parse-error.ts';

// ---- helpers

/** A small seeded PRNG, so a failing chunking can be reproduced. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

function randomContent(size: number, seed: number, boundary: string): Buffer {
  const random = prng(seed);
  const out = Buffer.alloc(size);
  for (let i = 0; i < size; i++) out[i] = Math.floor(random() * 256);
  // Sprinkle in near-delimiters: boundary text, CRLF--boundary cut short, and one with a wrong last byte.
  const decoys = [`\r\n--${boundary.slice(0, -1)}`, `\r\n--${boundary}`.slice(0, -1) + 'x', `--${boundary}`, '\r\n\r\n', '\r\n--', '\r', '\r\n-'];
  for (let at = 0, d = 0; at + 80 < size; at += Math.max(40, Math.floor(size / 50)), d++) {
    Buffer.from(decoys[d % decoys.length]!, 'latin1').copy(out, at);
  }
  return out;
}

interface Part {
  name?: string;
  fileName?: string;
  type?: string;
  headers?: string[];
  data: Buffer | string;
}

function body(boundary: string, parts: Part[], { preamble = '', epilogue = '', close = true } = {}): Buffer {
  const pieces: Buffer[] = [Buffer.from(preamble)];
  for (const part of parts) {
    let disposition = 'Content-Disposition: form-data';
    if (part.name !== undefined) disposition += `; name="${part.name}"`;
    if (part.fileName !== undefined) disposition += `; filename="${part.fileName}"`;
    const headers = [disposition, ...(part.type ? [`Content-Type: ${part.type}`] : []), ...(part.headers ?? [])];
    pieces.push(Buffer.from(`${pieces.length > 1 || preamble ? '\r\n' : ''}--${boundary}\r\n${headers.join('\r\n')}\r\n\r\n`));
    pieces.push(typeof part.data === 'string' ? Buffer.from(part.data) : part.data);
  }
  if (close) pieces.push(Buffer.from(`\r\n--${boundary}--${epilogue}`));
  return Buffer.concat(pieces);
}

function chunkBy(buffer: Buffer, sizes: number[] | ((index: number) => number)): Buffer[] {
  const chunks: Buffer[] = [];
  for (let at = 0, i = 0; at < buffer.length; i++) {
    const size = Array.isArray(sizes) ? sizes[i % sizes.length]! : sizes(i);
    chunks.push(Buffer.from(buffer.subarray(at, at + size))); // owned copies, like the transport's
    at += size;
  }
  return chunks;
}

function randomChunks(buffer: Buffer, seed: number, max: number): Buffer[] {
  const random = prng(seed);
  return chunkBy(buffer, () => 1 + Math.floor(random() * max));
}

interface ReceivedFile {
  info: MultipartFileInfo;
  chunks: Buffer[];
  ended: boolean;
}

interface Outcome {
  log: string[];
  files: ReceivedFile[];
  fields: Record<string, string | string[]> | null;
  summary: MultipartSummary | null;
  error: unknown;
  writeResults: boolean[];
}

interface RunOptions {
  limits?: Partial<MultipartLimits>;
  accept?: (info: MultipartFileInfo) => boolean;
  onData?: (chunk: Buffer, outcome: Outcome) => boolean | void;
  /** Called after each write with the outcome so far and the number of bytes written. */
  afterWrite?: (outcome: Outcome, written: number) => void;
}

const BOUNDARY = 'x-BoUnDaRy-42';
const CONTENT_TYPE = `multipart/form-data; boundary=${BOUNDARY}`;

/** Feeds chunks synchronously, ends, and waits for finish()/error(). */
function run(chunks: Buffer[], options: RunOptions = {}, contentType = CONTENT_TYPE): Promise<Outcome> {
  const outcome: Outcome = { log: [], files: [], fields: null, summary: null, error: null, writeResults: [] };
  return new Promise((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      if (!settled) reject(new Error(`neither finish nor error: ${outcome.log.join(' ')}`));
    }, 2000);
    const settle = (): void => {
      if (settled) return reject(new Error(`settled twice: ${outcome.log.join(' ')}`));
      settled = true;
      clearTimeout(timer);
      // Give stray late callbacks (busboy works on process.nextTick) a chance to show up in the log.
      setImmediate(() => setImmediate(() => resolve(outcome)));
    };
    const current = (): ReceivedFile => outcome.files[outcome.files.length - 1]!;
    const events: MultipartEvents = {
      fileStart(info) {
        outcome.log.push(`start:${info.fieldName}`);
        const accepted = options.accept ? options.accept(info) : true;
        outcome.files.push({ info, chunks: [], ended: false });
        if (!accepted) current().ended = true;
        return accepted;
      },
      fileData(chunk) {
        if (outcome.log[outcome.log.length - 1] !== 'data') outcome.log.push('data');
        current().chunks.push(chunk); // kept without copying: the parser must not reuse it
        return options.onData ? options.onData(chunk, outcome) : undefined;
      },
      fileEnd() {
        outcome.log.push('end');
        current().ended = true;
      },
      finish(fields, summary) {
        outcome.log.push('finish');
        outcome.fields = fields;
        outcome.summary = summary;
        settle();
      },
      error(error) {
        outcome.log.push('error');
        outcome.error = error;
        settle();
      },
    };
    const parser = new MultipartParser(contentType, events, options.limits);
    let written = 0;
    for (const chunk of chunks) {
      outcome.writeResults.push(parser.write(chunk));
      written += chunk.length;
      options.afterWrite?.(outcome, written);
    }
    parser.end();
  });
}

const fileData = (file: ReceivedFile | undefined): Buffer => Buffer.concat(file?.chunks ?? []);

function expectParseError(t: Test, outcome: Outcome, pattern: RegExp): void {
  t.ok(outcome.error instanceof ParseError, `a ParseError (got ${String(outcome.error)})`);
  t.match((outcome.error as Error).message, pattern);
  t.equal(outcome.log.filter((entry) => entry === 'error').length, 1, 'error() once');
  t.notOk(outcome.log.includes('finish'), 'no finish()');
}

// ---- Content-Type

t.test('Content-Type validation happens at construction', async (t) => {
  const events = { fileStart() {}, fileData() {}, fileEnd() {}, finish() {}, error() {} };
  t.equal(multipartBoundary('multipart/form-data; boundary="a b:c"'), 'a b:c', 'quoted boundary');
  t.equal(multipartBoundary('Multipart/Form-Data; charset=utf-8; BOUNDARY=abc'), 'abc');
  for (const [contentType, pattern] of [
    ['multipart/form-data', /no boundary/],
    ['multipart/form-data; charset=utf-8', /no boundary/],
    ['multipart/form-data; boundary=', /1-70 characters/],
    [`multipart/form-data; boundary=${'b'.repeat(71)}`, /1-70 characters/],
    ['application/json', /must be multipart\/form-data/],
    ['application/x-www-form-urlencoded', /must be multipart\/form-data/],
    ['multipart/mixed; boundary=abc', /must be multipart\/form-data/],
    ['', /must be multipart\/form-data/],
  ] as const) {
    let thrown: unknown = null;
    try {
      new MultipartParser(contentType, events);
    } catch (error) {
      thrown = error;
    }
    t.ok(thrown instanceof ParseError, `${contentType}: a ParseError`);
    t.match((thrown as Error).message, pattern, contentType);
  }
});

// ---- round trips

t.test('file bytes round-trip exactly, whatever the chunking', async (t) => {
  const sizes = [0, 1, 2, 300 * 1024, 3 * 1024 * 1024];
  for (const [index, size] of sizes.entries()) {
    const content = randomContent(size, 100 + index, BOUNDARY);
    const payload = body(BOUNDARY, [
      { name: 'fileName', data: 'picture.png' },
      { name: 'file', fileName: 'picture.png', type: 'image/png', data: content },
      { name: 'tags', data: 'a,b' },
    ]);
    const chunkings: Array<[string, Buffer[]]> = [
      ['whole', [payload]],
      ['7 bytes', chunkBy(payload, [7])],
      ['4096 bytes', chunkBy(payload, [4096])],
      ['random up to 64 KiB', randomChunks(payload, size + 1, 65536)],
    ];
    if (size <= 300 * 1024) chunkings.push(['1 byte', chunkBy(payload, [1])], ['random up to 100', randomChunks(payload, size + 2, 100)]);
    for (const [label, chunks] of chunkings) {
      const outcome = await run(chunks);
      const what = `${size} bytes, ${label}`;
      t.equal(outcome.error, null, `${what}: no error`);
      t.same(outcome.log, ['start:file', ...(size > 0 ? ['data'] : []), 'end', 'finish'], `${what}: event order`);
      t.same(outcome.files[0]?.info, { fieldName: 'file', fileName: 'picture.png', declaredType: 'image/png' }, `${what}: file info`);
      t.ok(fileData(outcome.files[0]).equals(content), `${what}: bytes identical`);
      t.same(outcome.fields, { fileName: 'picture.png', tags: 'a,b' }, `${what}: fields`);
      t.same(outcome.summary, { hasFile: true, fileCount: 1 }, `${what}: summary`);
      t.ok(outcome.writeResults.every(Boolean), `${what}: never asked to pause`);
    }
  }
});

t.test('every split point of a small body gives the same events, delivered synchronously', async (t) => {
  const first = randomContent(120, 7, BOUNDARY);
  const second = Buffer.from(`ab\r\n--${BOUNDARY.slice(0, 5)}cd\r\n`);
  const parts: Part[] = [
    { name: 'fileName', data: 'n.png' },
    { name: 'avatar', fileName: 'a.bin', data: first },
    { name: 'folder', data: 'x/y' },
    { name: 'file', fileName: 'f.txt', type: 'text/plain', data: second },
  ];
  const payload = body(BOUNDARY, parts, { preamble: 'preamble text', epilogue: '\r\nepilogue' });
  const delimiter = `\r\n--${BOUNDARY}`.length;
  // Where each file's bytes lie in the body, to check what must have been delivered after each write.
  const ranges = [first, second].map((content) => {
    const start = payload.indexOf(content);
    return { start, end: start + content.length };
  });
  const expectLog = ['start:avatar', 'data', 'end', 'start:file', 'data', 'end', 'finish'];
  const checkProgress = (outcome: Outcome, written: number): void => {
    ranges.forEach((range, index) => {
      const delivered = fileData(outcome.files[index]).length;
      // Everything but a possible partial delimiter is delivered before write() returns...
      const due = Math.max(0, Math.min(range.end, written - delimiter) - range.start);
      if (delivered < due) throw new Error(`after ${written} bytes file ${index} has ${delivered} < ${due} bytes`);
      // ...and the file has ended once its closing delimiter is complete.
      if (written >= range.end + delimiter && !outcome.files[index]?.ended) throw new Error(`after ${written} bytes file ${index} has not ended`);
    });
  };
  for (let split = 0; split <= payload.length; split++) {
    const chunks = [payload.subarray(0, split), payload.subarray(split)].filter((chunk) => chunk.length > 0);
    const outcome = await run(chunks, { afterWrite: checkProgress });
    if (outcome.error || JSON.stringify(outcome.log) !== JSON.stringify(expectLog)) {
      t.fail(`split at ${split}: ${outcome.log.join(' ')} ${String(outcome.error)}`);
      continue;
    }
    if (!fileData(outcome.files[0]).equals(first) || !fileData(outcome.files[1]).equals(second)) t.fail(`split at ${split}: bytes differ`);
    if (JSON.stringify(outcome.fields) !== JSON.stringify({ fileName: 'n.png', folder: 'x/y' })) t.fail(`split at ${split}: fields`);
  }
  for (const size of [1, 2, 3, 5]) {
    const outcome = await run(chunkBy(payload, [size]), { afterWrite: checkProgress });
    t.same(outcome.log, expectLog, `${size}-byte chunks`);
    t.ok(fileData(outcome.files[0]).equals(first) && fileData(outcome.files[1]).equals(second), `${size}-byte chunks: bytes`);
  }
  t.pass(`${payload.length + 1} split points checked`);
});

t.test('every file part is reported in order with its field name; the consumer picks one', async (t) => {
  const avatar = randomContent(1000, 1, BOUNDARY);
  const file = randomContent(2000, 2, BOUNDARY);
  const third = randomContent(10, 3, BOUNDARY);
  const parts: Part[] = [
    { name: 'avatar', fileName: 'a.png', type: 'image/png', data: avatar },
    { name: 'file', fileName: 'f.jpg', type: 'image/jpeg', data: file },
    { name: 'other', fileName: 'o.bin', data: third },
  ];
  const all = await run(chunkBy(body(BOUNDARY, parts), [333]));
  t.same(
    all.files.map((received) => received.info),
    [
      { fieldName: 'avatar', fileName: 'a.png', declaredType: 'image/png' },
      { fieldName: 'file', fileName: 'f.jpg', declaredType: 'image/jpeg' },
      { fieldName: 'other', fileName: 'o.bin', declaredType: 'text/plain' },
    ],
  );
  t.same(all.log, ['start:avatar', 'data', 'end', 'start:file', 'data', 'end', 'start:other', 'data', 'end', 'finish']);
  t.ok(fileData(all.files[0]).equals(avatar) && fileData(all.files[1]).equals(file) && fileData(all.files[2]).equals(third));
  t.same(all.summary, { hasFile: true, fileCount: 3 });

  // The field named `file` wins: the consumer skips the rest.
  const chosen = await run(chunkBy(body(BOUNDARY, parts), [333]), { accept: (info) => info.fieldName === 'file' });
  t.same(chosen.log, ['start:avatar', 'start:file', 'data', 'end', 'start:other', 'finish'], 'skipped files get no data or end');
  t.ok(fileData(chosen.files[1]).equals(file), 'the `file` part');
  t.equal(fileData(chosen.files[0]).length + fileData(chosen.files[2]).length, 0, 'skipped parts delivered nothing');

  // No part named `file`: the first file.
  let taken = false;
  const firstOnly = await run(chunkBy(body(BOUNDARY, [parts[0]!, parts[2]!]), [100]), {
    accept: () => {
      const take = !taken;
      taken = true;
      return take;
    },
  });
  t.same(firstOnly.log, ['start:avatar', 'data', 'end', 'start:other', 'finish']);
  t.ok(fileData(firstOnly.files[0]).equals(avatar));
});

t.test('what counts as a file part', async (t) => {
  const outcome = await run([
    body(BOUNDARY, [
      { name: 'file', data: 'no filename, but named file' },
      { name: 'blob', type: 'application/octet-stream', data: 'octet-stream' },
      { name: 'json', type: 'application/json', data: '{"a":1}' },
      { name: 'text', data: 'plain' },
      { fileName: 'nameless.txt', data: 'no name' },
    ]),
  ]);
  t.same(
    outcome.files.map((file) => [file.info, fileData(file).toString()]),
    [
      [{ fieldName: 'file', fileName: null, declaredType: 'text/plain' }, 'no filename, but named file'],
      [{ fieldName: 'blob', fileName: null, declaredType: 'application/octet-stream' }, 'octet-stream'],
      [{ fieldName: '', fileName: 'nameless.txt', declaredType: 'text/plain' }, 'no name'],
    ],
  );
  t.same(outcome.fields, { json: '{"a":1}', text: 'plain' });
});

t.test('fields: repeated names collect into an array; __proto__ stays an ordinary field; UTF-8 values', async (t) => {
  const outcome = await run([
    body(BOUNDARY, [
      { name: 'tags', data: 'a' },
      { name: 'tags', data: 'b' },
      { name: '__proto__', data: 'x' },
      { name: 'tags', data: 'c' },
      { name: 'fileName', data: 'héllo wörld.png' },
      { name: 'empty', data: '' },
      { name: 'file', fileName: 'f', data: 'F' },
    ]),
  ]);
  t.equal(outcome.error, null);
  t.same(outcome.fields?.tags, ['a', 'b', 'c']);
  t.equal(outcome.fields?.fileName, 'héllo wörld.png');
  t.equal(outcome.fields?.empty, '');
  t.ok(Object.hasOwn(outcome.fields!, '__proto__'), '__proto__ is an own property');
  t.equal(Object.getPrototypeOf(outcome.fields), Object.prototype, 'the prototype is untouched');
});

t.test('no file part: finish() with hasFile false', async (t) => {
  const outcome = await run([body(BOUNDARY, [{ name: 'fileName', data: 'a.png' }])]);
  t.same(outcome.log, ['finish']);
  t.same(outcome.summary, { hasFile: false, fileCount: 0 });
  t.same(outcome.fields, { fileName: 'a.png' });

  const empty = await run([Buffer.from(`--${BOUNDARY}--\r\n`)]);
  t.same(empty.log, ['finish'], 'a body with only the closing delimiter');
  t.same(empty.summary, { hasFile: false, fileCount: 0 });
});

// ---- errors

t.test('a truncated body is a ParseError, wherever it is cut', async (t) => {
  const payload = body(BOUNDARY, [
    { name: 'fileName', data: 'a.png' },
    { name: 'file', fileName: 'a.png', data: randomContent(50, 9, BOUNDARY) },
  ]);
  for (let cut = 0; cut < payload.length; cut++) {
    const outcome = await run(cut === 0 ? [] : [payload.subarray(0, cut)]);
    if (!(outcome.error instanceof ParseError) || !/truncated/.test(outcome.error.message) || outcome.log.includes('finish')) {
      t.fail(`cut at ${cut}: ${outcome.log.join(' ')} ${String(outcome.error)}`);
    }
  }
  const outcome = await run([payload.subarray(0, payload.length - 2)]);
  expectParseError(t, outcome, /^The multipart body is truncated: it ends before its closing boundary$/);
  t.same(outcome.log, ['start:file', 'data', 'end', 'error'], 'the complete part was delivered before the error');
});

t.test('part headers beyond maxHeaderBytes are a ParseError; exactly at the limit they are fine', async (t) => {
  const limit = 200;
  // Counted: the bytes between the delimiter and the blank line, i.e. CRLF + the header lines.
  const build = (size: number): Buffer => {
    const base = `\r\nContent-Disposition: form-data; name="file"; filename="a"\r\nX-Pad: `;
    const pad = 'p'.repeat(size - base.length);
    return Buffer.from(`--${BOUNDARY}${base}${pad}\r\n\r\nDATA\r\n--${BOUNDARY}--`);
  };
  for (const chunking of [[1], [7], [1 << 20]]) {
    const atLimit = await run(chunkBy(build(limit), chunking), { limits: { maxHeaderBytes: limit } });
    t.equal(atLimit.error, null, `exactly ${limit} bytes, chunks of ${chunking[0]}`);
    t.equal(fileData(atLimit.files[0]).toString(), 'DATA');
    const over = await run(chunkBy(build(limit + 1), chunking), { limits: { maxHeaderBytes: limit } });
    expectParseError(t, over, new RegExp(`more than ${limit} bytes of headers`));
  }
  // A header block that never ends is rejected while it streams in, not buffered.
  const endless = Buffer.concat([Buffer.from(`--${BOUNDARY}\r\nX-Long: `), Buffer.alloc(100_000, 'a')]);
  const outcome = await run(chunkBy(endless, [4096]));
  expectParseError(t, outcome, new RegExp(`more than ${DEFAULT_MULTIPART_LIMITS.maxHeaderBytes} bytes of headers`));
});

t.test('part, file and field counts are limited', async (t) => {
  const files = (count: number): Part[] => Array.from({ length: count }, (_, i) => ({ name: `f${i}`, fileName: `${i}.bin`, data: 'x' }));
  const fields = (count: number): Part[] => Array.from({ length: count }, (_, i) => ({ name: `v${i}`, data: 'y' }));

  t.equal((await run([body(BOUNDARY, files(3))], { limits: { maxFiles: 3 } })).error, null, '3 files of 3');
  expectParseError(t, await run([body(BOUNDARY, files(4))], { limits: { maxFiles: 3 } }), /more than 3 files/);
  expectParseError(t, await run([body(BOUNDARY, files(11))]), /more than 10 files/);

  t.equal((await run([body(BOUNDARY, fields(5))], { limits: { maxFields: 5 } })).error, null, '5 fields of 5');
  expectParseError(t, await run([body(BOUNDARY, fields(6))], { limits: { maxFields: 5 } }), /more than 5 fields/);

  expectParseError(t, await run([body(BOUNDARY, [...fields(3), ...files(3)])], { limits: { maxParts: 5 } }), /more than 5 parts/);
  const many = await run(chunkBy(body(BOUNDARY, fields(1001)), [65536]), { limits: { maxFields: 5000 } });
  expectParseError(t, many, /more than 1000 parts/);
});

t.test('field sizes are limited, one by one and in total', async (t) => {
  const ok = await run([body(BOUNDARY, [{ name: 'a', data: 'x'.repeat(100) }])], { limits: { maxFieldBytes: 100 } });
  t.equal(ok.error, null, 'exactly at the limit');
  expectParseError(t, await run([body(BOUNDARY, [{ name: 'a', data: 'x'.repeat(101) }])], { limits: { maxFieldBytes: 100 } }), /Field "a" is larger than 100 bytes/);
  expectParseError(
    t,
    await run(chunkBy(body(BOUNDARY, [{ name: 'big', data: 'x'.repeat(1 << 20) }]), [65536])),
    /Field "big" is larger than 65536 bytes/,
  );
  const total = Array.from({ length: 5 }, (_, i) => ({ name: `f${i}`, data: 'z'.repeat(60 * 1024) }));
  expectParseError(t, await run(chunkBy(body(BOUNDARY, total), [65536])), /larger than 262144 bytes in total/);
});

// ---- consumer contract

t.test('backpressure: fileData returning false makes write() return false; later writes return true again', async (t) => {
  const content = randomContent(10_000, 5, BOUNDARY);
  const payload = body(BOUNDARY, [{ name: 'file', fileName: 'a', data: content }]);
  let behind = 0;
  const outcome = await run(chunkBy(payload, [1000]), {
    onData: () => {
      behind += 1;
      return behind % 3 !== 0; // every third file chunk "the storage is behind"
    },
  });
  t.equal(outcome.error, null);
  t.ok(fileData(outcome.files[0]).equals(content), 'nothing lost or held back while paused');
  t.ok(outcome.writeResults.includes(false), 'some writes asked for a pause');
  t.ok(outcome.writeResults.includes(true), 'the others did not');
  t.equal(outcome.writeResults.filter((result) => !result).length, Math.floor(behind / 3));
});

t.test('a throw from a callback is reported through error() as is, and nothing follows', async (t) => {
  const payload = body(BOUNDARY, [
    { name: 'file', fileName: 'a', data: randomContent(5000, 6, BOUNDARY) },
    { name: 'second', fileName: 'b', data: 'more' },
  ]);
  const problem = new Error('storage quota exceeded');
  let calls = 0;
  const outcome = await run(chunkBy(payload, [512]), {
    onData: () => {
      calls += 1;
      if (calls === 3) throw problem;
    },
  });
  t.equal(outcome.error, problem, 'the very error');
  t.same(outcome.log, ['start:file', 'data', 'error']);
  t.equal(calls, 3, 'no fileData after the throw');
  t.equal(outcome.writeResults.filter((result) => result).length, 2, 'writes after the failure return false');
});

t.test('destroy() from a callback stops everything; a late end() does nothing', async (t) => {
  const log: string[] = [];
  const parser: MultipartParser = new MultipartParser(CONTENT_TYPE, {
    fileStart: () => void log.push('start'),
    fileData: () => {
      log.push('data');
      parser.destroy();
    },
    fileEnd: () => void log.push('end'),
    finish: () => void log.push('finish'),
    error: () => void log.push('error'),
  });
  const payload = body(BOUNDARY, [
    { name: 'file', fileName: 'a', data: 'x'.repeat(3000) },
    { name: 'other', fileName: 'b', data: 'y' },
  ]);
  for (const chunk of chunkBy(payload, [1000])) t.equal(parser.write(chunk), false);
  parser.end();
  await new Promise((resolve) => setTimeout(resolve, 20));
  t.same(log, ['start', 'data']);
});

t.test('fileData chunks may be kept: they stay intact after later writes, also around held-back partial delimiters', async (t) => {
  // A body where busboy's lookbehind holds back bytes (a partial delimiter at a chunk's end) many times.
  const near = Buffer.from(`\r\n--${BOUNDARY}`.slice(0, -1));
  const content = Buffer.concat(Array.from({ length: 200 }, (_, i) => Buffer.concat([near, Buffer.from([i % 2 === 0 ? 0 : 255, i])])));
  const payload = body(BOUNDARY, [{ name: 'file', fileName: 'a', data: content }]);
  for (const size of [near.length, near.length + 1, 5, 13]) {
    const outcome = await run(chunkBy(payload, [size]));
    t.ok(fileData(outcome.files[0]).equals(content), `chunks of ${size}`);
  }
});
