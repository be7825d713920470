import fc from 'fast-check';
import t from 'tap';
import type { Test } from 'tap';
import { ServiceError } from '../../src/errors/service-error.ts';
import { DEFAULT_MULTIPART_LIMITS, MultipartParser, multipartBoundary, type MultipartLimits } from '../../src/uploads/parsers/multipart-parser.ts';
import { chunkBy, isBadRequest, prng, randomChunks, record, splitAt, summary, type RecordOptions, type Recording } from '../helpers/body-parser-events.ts';

// ---- helpers

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

const BOUNDARY = 'x-BoUnDaRy-42';
const CONTENT_TYPE = `multipart/form-data; boundary=${BOUNDARY}`;

interface RunOptions extends RecordOptions {
  limits?: Partial<MultipartLimits>;
}

function run(chunks: Buffer[], options: RunOptions = {}, boundary = BOUNDARY): Recording {
  return record((events) => new MultipartParser(boundary, events, options.limits), chunks, options);
}

const fileData = (recording: Recording, index: number): Buffer => recording.files[index]?.data ?? Buffer.alloc(0);

function expectBadRequest(t: Test, recording: Recording, pattern: RegExp): void {
  t.ok(isBadRequest(recording.error), `a 400 (got ${String(recording.error)})`);
  t.match((recording.error as Error).message, pattern);
  t.equal(recording.log.filter((entry) => entry === 'error').length, 1, 'error() once');
  t.notOk(recording.log.includes('finish'), 'no finish()');
  t.same(recording.violations, [], 'the event contract held');
}

// ---- Content-Type

t.test('the Content-Type gives the boundary, or a 400', async (t) => {
  t.equal(multipartBoundary('multipart/form-data; boundary="a b:c"'), 'a b:c', 'quoted boundary');
  t.equal(multipartBoundary('Multipart/Form-Data; charset=utf-8; BOUNDARY=abc'), 'abc');
  t.equal(multipartBoundary('multipart/form-data;boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW'), '----WebKitFormBoundary7MA4YWxkTrZu0gW');
  for (const [contentType, pattern] of [
    ['multipart/form-data', /no boundary/],
    ['multipart/form-data; charset=utf-8', /no boundary/],
    ['multipart/form-data;boundary', /no boundary/],
    ['multipart/form-data; boundary=', /1-70 characters/],
    ['multipart/form-data; boundary=""', /1-70 characters/],
    [`multipart/form-data; boundary=${'b'.repeat(71)}`, /1-70 characters/],
    ['multipart/form-data; boundary="\u00e9t\u00e9"', /printable ASCII/],
    ['multipart/form-data; boundary="ends in space "', /printable ASCII/],
    ['application/json', /must be multipart\/form-data/],
    ['application/x-www-form-urlencoded', /must be multipart\/form-data/],
    ['multipart/mixed; boundary=abc', /must be multipart\/form-data/],
    ['form-data; boundary=abc', /must be multipart\/form-data/],
    ['', /must be multipart\/form-data/],
  ] as const) {
    let thrown: unknown = null;
    try {
      multipartBoundary(contentType);
    } catch (error) {
      thrown = error;
    }
    t.ok(isBadRequest(thrown), `${contentType}: a 400`);
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
      const outcome = run(chunks);
      const what = `${size} bytes, ${label}`;
      t.equal(outcome.error, null, `${what}: no error`);
      t.same(outcome.log, ['start:file', ...(size > 0 ? ['data'] : []), 'end', 'finish'], `${what}: event order`);
      t.same(outcome.files[0]?.info, { fieldName: 'file', fileName: 'picture.png', declaredType: 'image/png' }, `${what}: file info`);
      t.ok(fileData(outcome, 0).equals(content), `${what}: bytes identical`);
      t.same(outcome.fields, { fileName: 'picture.png', tags: 'a,b' }, `${what}: fields`);
      t.same(outcome.violations, [], `${what}: contract`);
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
  const whole = summary(run([payload]));
  t.same(run([payload]).log, ['start:avatar', 'data', 'end', 'start:file', 'data', 'end', 'finish']);
  const checkProgress = (outcome: Recording, written: number): void => {
    ranges.forEach((range, index) => {
      const delivered = fileData(outcome, index).length;
      // Everything but a possible partial delimiter is delivered before write() returns...
      const due = Math.max(0, Math.min(range.end, written - delimiter) - range.start);
      if (delivered < due) throw new Error(`after ${written} bytes file ${index} has ${delivered} < ${due} bytes`);
      // ...and the file has ended once its closing delimiter is complete.
      if (written >= range.end + delimiter && !outcome.files[index]?.ended) throw new Error(`after ${written} bytes file ${index} has not ended`);
    });
  };
  let failures = 0;
  for (let split = 0; split <= payload.length; split++) {
    for (const chunks of [splitAt(payload, [split]), splitAt(payload, [split, split + 1]), splitAt(payload, [split, split + delimiter - 1])]) {
      const outcome = run(chunks, { afterWrite: checkProgress });
      if (summary(outcome) !== whole) {
        failures++;
        t.fail(`split at ${split} (${chunks.length} chunks): ${summary(outcome)}`);
      }
    }
  }
  for (const size of [1, 2, 3, 5]) {
    t.equal(summary(run(chunkBy(payload, [size]), { afterWrite: checkProgress })), whole, `${size}-byte chunks`);
  }
  t.equal(failures, 0, `${payload.length + 1} split points, each also with a 1-byte and a delimiter-long middle chunk`);
});

t.test('random split points of generated bodies give the events of the whole body', async (t) => {
  const partArb = fc.record({
    name: fc.constantFrom('file', 'avatar', 'note', 'tags', undefined),
    fileName: fc.option(fc.constantFrom('a.png', 'b c.txt', 'é.bin', ''), { nil: undefined }),
    type: fc.option(fc.constantFrom('image/png', 'application/octet-stream', 'text/plain; charset=utf-8'), { nil: undefined }),
    data: fc.oneof(
      fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
      fc.constantFrom(`\r\n--${BOUNDARY.slice(0, 6)}`, `\r\n--${BOUNDARY}x`.slice(0, -2), '\r\n\r\n--', '\r', '-').map((text) => Buffer.from(text)),
    ),
  });
  let cases = 0;
  const bodyArb = fc.tuple(fc.array(partArb, { minLength: 0, maxLength: 5 }), fc.boolean()).map(([parts, preamble]) =>
    body(BOUNDARY, parts as Part[], preamble ? { preamble: 'pre\r\n', epilogue: 'epi' } : {}),
  );
  // Also bodies broken in one place: truncated, a byte changed, or a byte inserted.
  const mutatedArb = fc.tuple(bodyArb, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('cut', 'change', 'insert')).map(([bytes, at, byte, how]) => {
    const i = at % (bytes.length + 1);
    if (how === 'cut') return bytes.subarray(0, i);
    if (how === 'insert') return Buffer.concat([bytes.subarray(0, i), Buffer.from([byte]), bytes.subarray(i)]);
    const copy = Buffer.from(bytes);
    if (i < copy.length) copy[i] = byte;
    return copy;
  });
  fc.assert(
    fc.property(fc.oneof(bodyArb, mutatedArb), fc.array(fc.nat(2000), { maxLength: 8 }), (payload, cuts) => {
      cases++;
      const wholeRecording = run([payload]);
      const whole = summary(wholeRecording);
      const split = summary(run(splitAt(payload, cuts.map((cut) => cut % (payload.length + 1)))));
      if (split !== whole) throw new Error(`split differs:\n${whole}\n${split}`);
      if (wholeRecording.violations.length > 0) throw new Error(`contract: ${whole}`);
      if (wholeRecording.error !== null && !isBadRequest(wholeRecording.error)) throw new Error(`not a 400: ${whole}`);
    }),
    { seed: 18_1, numRuns: 2000 },
  );
  t.equal(cases, 2000);
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
  const all = run(chunkBy(body(BOUNDARY, parts), [333]));
  t.same(
    all.files.map((received) => received.info),
    [
      { fieldName: 'avatar', fileName: 'a.png', declaredType: 'image/png' },
      { fieldName: 'file', fileName: 'f.jpg', declaredType: 'image/jpeg' },
      { fieldName: 'other', fileName: 'o.bin', declaredType: 'text/plain' },
    ],
  );
  t.same(all.log, ['start:avatar', 'data', 'end', 'start:file', 'data', 'end', 'start:other', 'data', 'end', 'finish']);
  t.ok(fileData(all, 0).equals(avatar) && fileData(all, 1).equals(file) && fileData(all, 2).equals(third));

  // The field named `file` wins: the consumer skips the rest.
  const chosen = run(chunkBy(body(BOUNDARY, parts), [333]), { accept: (info) => info.fieldName === 'file' });
  t.same(chosen.log, ['start:avatar', 'start:file', 'data', 'end', 'start:other', 'finish'], 'skipped files get no data or end');
  t.ok(fileData(chosen, 1).equals(file), 'the `file` part');
  t.equal(fileData(chosen, 0).length + fileData(chosen, 2).length, 0, 'skipped parts delivered nothing');
  t.same(chosen.violations, []);
});

t.test('what counts as a file part', async (t) => {
  const outcome = run([
    body(BOUNDARY, [
      { name: 'file', data: 'no filename, but named file' },
      { name: 'blob', type: 'application/octet-stream', data: 'octet-stream' },
      { name: 'json', type: 'application/json', data: '{"a":1}' },
      { name: 'text', data: 'plain' },
      { fileName: 'nameless.txt', data: 'no name' },
      { name: 'empty', fileName: '', data: 'an empty filename is still a file' },
    ]),
  ]);
  t.same(
    outcome.files.map((file) => [file.info, file.data.toString()]),
    [
      [{ fieldName: 'file', fileName: null, declaredType: 'text/plain' }, 'no filename, but named file'],
      [{ fieldName: 'blob', fileName: null, declaredType: 'application/octet-stream' }, 'octet-stream'],
      [{ fieldName: '', fileName: 'nameless.txt', declaredType: 'text/plain' }, 'no name'],
      [{ fieldName: 'empty', fileName: '', declaredType: 'text/plain' }, 'an empty filename is still a file'],
    ],
  );
  t.same(outcome.fields, { json: '{"a":1}', text: 'plain' });
});

t.test('part headers: filename* (RFC 8187), quoted strings, case, folding, the first of a repeated header', async (t) => {
  const cases: Array<[string, { fieldName: string; fileName: string | null; declaredType: string }]> = [
    [`Content-Disposition: form-data; name="file"; filename*=UTF-8''%E2%82%AC%20rates.png`, { fieldName: 'file', fileName: '€ rates.png', declaredType: 'text/plain' }],
    [`Content-Disposition: form-data; name="file"; filename="fallback.png"; filename*=utf-8''real.png`, { fieldName: 'file', fileName: 'real.png', declaredType: 'text/plain' }],
    [`Content-Disposition: form-data; name="file"; filename*=iso-8859-1'en'%E9t%E9.txt`, { fieldName: 'file', fileName: 'été.txt', declaredType: 'text/plain' }],
    [`Content-Disposition: form-data; name="file"; filename*=UTF-8''a%0D%0Ab.png`, { fieldName: 'file', fileName: 'a\r\nb.png', declaredType: 'text/plain' }],
    [`content-disposition: FORM-DATA; NAME=file; FILENAME=plain.png\r\ncontent-type: IMAGE/PNG; charset=x`, { fieldName: 'file', fileName: 'plain.png', declaredType: 'image/png' }],
    [`Content-Disposition: form-data; name="file"; filename="q\\"uo\\\\te\\d.png"`, { fieldName: 'file', fileName: 'q"uo\\te\\d.png', declaredType: 'text/plain' }],
    [`Content-Disposition: form-data; name="file"; filename="a;b=c.png"`, { fieldName: 'file', fileName: 'a;b=c.png', declaredType: 'text/plain' }],
    [`Content-Disposition: form-data;\r\n name="file"; filename="folded.png"`, { fieldName: 'file', fileName: 'folded.png', declaredType: 'text/plain' }],
    [`Content-Disposition: form-data; name="file"; filename="first.png"\r\nContent-Disposition: form-data; name="x"; filename="second.png"`, { fieldName: 'file', fileName: 'first.png', declaredType: 'text/plain' }],
    [`Content-Type: image/gif\r\nContent-Disposition: form-data; name="file"; filename="../../etc/passwd"`, { fieldName: 'file', fileName: '../../etc/passwd', declaredType: 'image/gif' }],
    [`Content-Disposition: form-data; name="file"; filename*=UTF-8''%ZZ; filename="kept.png"`, { fieldName: 'file', fileName: 'kept.png', declaredType: 'text/plain' }],
  ];
  for (const [headers, info] of cases) {
    const payload = Buffer.concat([Buffer.from(`--${BOUNDARY}\r\n${headers}\r\n\r\n`), Buffer.from('DATA'), Buffer.from(`\r\n--${BOUNDARY}--`)]);
    const outcome = run([payload]);
    t.same(outcome.files.map((file) => file.info), [info], JSON.stringify(headers));
    t.equal(fileData(outcome, 0).toString(), 'DATA');
  }
  // Raw bytes of a file name are UTF-8; invalid sequences become U+FFFD.
  const raw = Buffer.concat([Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="`), Buffer.from([0x61, 0xc3, 0xa9, 0xff, 0xe2, 0x82]), Buffer.from(`.png"\r\n\r\nX\r\n--${BOUNDARY}--`)]);
  t.equal(run([raw]).files[0]?.info.fileName, new TextDecoder().decode(Buffer.from([0x61, 0xc3, 0xa9, 0xff, 0xe2, 0x82, 0x2e, 0x70, 0x6e, 0x67])));
  // Parts without a form-data disposition are skipped, not files or fields.
  const skipped = run([body(BOUNDARY, [{ headers: [], data: 'x' }, { name: 'file', fileName: 'f', data: 'F' }]).toString().replace('Content-Disposition: form-data\r\n', 'X-Other: 1\r\n')].map((text) => Buffer.from(text)));
  t.same(skipped.log, ['start:file', 'data', 'end', 'finish']);
  const attachment = run([Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: attachment; filename="a.png"\r\n\r\nA\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="f"\r\n\r\nF\r\n--${BOUNDARY}--`)]);
  t.same(attachment.log, ['start:file', 'data', 'end', 'finish'], 'an attachment disposition is not form-data');
});

t.test('fields: repeated names collect into an array; __proto__ stays an ordinary field; UTF-8 values', async (t) => {
  const outcome = run([
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

t.test('no file part: a 400 at end()', async (t) => {
  const outcome = run([body(BOUNDARY, [{ name: 'fileName', data: 'a.png' }])]);
  expectBadRequest(t, outcome, /^The form contains no file$/);
  t.equal((outcome.error as ServiceError).value, 'file');
  expectBadRequest(t, run([Buffer.from(`--${BOUNDARY}--\r\n`)]), /no file/);
});

// ---- errors

t.test('a truncated body is a 400, wherever it is cut', async (t) => {
  const payload = body(BOUNDARY, [
    { name: 'fileName', data: 'a.png' },
    { name: 'file', fileName: 'a.png', data: randomContent(50, 9, BOUNDARY) },
  ]);
  const closeEnd = payload.length; // the body ends right after `--boundary--`
  for (let cut = 0; cut < closeEnd; cut++) {
    const outcome = run(cut === 0 ? [] : [payload.subarray(0, cut)]);
    if (!isBadRequest(outcome.error) || !/truncated/.test(outcome.error.message) || outcome.log.includes('finish') || outcome.violations.length > 0) {
      t.fail(`cut at ${cut}: ${summary(outcome)}`);
    }
  }
  const outcome = run([payload.subarray(0, payload.length - 2)]);
  expectBadRequest(t, outcome, /^The multipart body is truncated: it ends before its closing boundary$/);
  t.same(outcome.log, ['start:file', 'data', 'end', 'error'], 'the complete part was delivered before the error');
});

t.test('malformed framing and headers are a 400', async (t) => {
  const cases: Array<[string, string, RegExp]> = [
    ['text after the delimiter', `--${BOUNDARY}junk\r\nContent-Disposition: form-data; name="file"\r\n\r\nx\r\n--${BOUNDARY}--`, /text after a boundary delimiter/],
    ['a header line without a colon', `--${BOUNDARY}\r\nContent-Disposition form-data\r\n\r\nx\r\n--${BOUNDARY}--`, /without a name/],
    ['a header line starting with a colon', `--${BOUNDARY}\r\n: value\r\n\r\nx\r\n--${BOUNDARY}--`, /without a name/],
    ['a bare LF in a header', `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"\nX-Injected: 1\r\n\r\nx\r\n--${BOUNDARY}--`, /bare line break/],
    ['a bare CR in a header', `--${BOUNDARY}\r\nContent-Disposition: form-data; name="fi\rle"\r\n\r\nx\r\n--${BOUNDARY}--`, /bare line break/],
  ];
  for (const [label, text, pattern] of cases) {
    for (const chunks of [[Buffer.from(text)], chunkBy(Buffer.from(text), [1])]) expectBadRequest(t, run(chunks), pattern);
    t.comment(label);
  }
  // Transport padding after a delimiter is fine.
  const padded = run([Buffer.from(`--${BOUNDARY} \t \r\nContent-Disposition: form-data; name="file"\r\n\r\nx\r\n--${BOUNDARY}--`)]);
  t.equal(padded.error, null);
  t.equal(fileData(padded, 0).toString(), 'x');
});

t.test('part headers beyond maxHeaderBytes are a 400; exactly at the limit they are fine', async (t) => {
  const limit = 200;
  // Counted: the bytes between the delimiter and the blank line, i.e. CRLF + the header lines.
  const build = (size: number): Buffer => {
    const base = `\r\nContent-Disposition: form-data; name="file"; filename="a"\r\nX-Pad: `;
    const pad = 'p'.repeat(size - base.length);
    return Buffer.from(`--${BOUNDARY}${base}${pad}\r\n\r\nDATA\r\n--${BOUNDARY}--`);
  };
  for (const chunking of [[1], [7], [1 << 20]]) {
    const atLimit = run(chunkBy(build(limit), chunking), { limits: { maxHeaderBytes: limit } });
    t.equal(atLimit.error, null, `exactly ${limit} bytes, chunks of ${chunking[0]}`);
    t.equal(fileData(atLimit, 0).toString(), 'DATA');
    const over = run(chunkBy(build(limit + 1), chunking), { limits: { maxHeaderBytes: limit } });
    expectBadRequest(t, over, new RegExp(`more than ${limit} bytes of headers`));
  }
  // A header block that never ends is refused while it streams in, not buffered.
  let refusedAfter = 0;
  const endless = Buffer.concat([Buffer.from(`--${BOUNDARY}\r\nX-Long: `), Buffer.alloc(100_000, 'a')]);
  const outcome = run(chunkBy(endless, [4096]), {
    afterWrite: (recording, written) => {
      if (recording.error && refusedAfter === 0) refusedAfter = written;
    },
  });
  expectBadRequest(t, outcome, new RegExp(`more than ${DEFAULT_MULTIPART_LIMITS.maxHeaderBytes} bytes of headers`));
  t.ok(refusedAfter > 0 && refusedAfter <= DEFAULT_MULTIPART_LIMITS.maxHeaderBytes + 2 * 4096, `refused after ${refusedAfter} bytes`);
});

t.test('part, file and field counts are limited', async (t) => {
  const files = (count: number): Part[] => Array.from({ length: count }, (_, i) => ({ name: `f${i}`, fileName: `${i}.bin`, data: 'x' }));
  const fields = (count: number): Part[] => Array.from({ length: count }, (_, i) => ({ name: `v${i}`, data: 'y' }));

  t.equal(run([body(BOUNDARY, files(3))], { limits: { maxFiles: 3 } }).error, null, '3 files of 3');
  expectBadRequest(t, run([body(BOUNDARY, files(4))], { limits: { maxFiles: 3 } }), /more than 3 files/);
  expectBadRequest(t, run([body(BOUNDARY, files(11))]), /more than 10 files/);

  t.equal(run([body(BOUNDARY, [...fields(5), ...files(1)])], { limits: { maxFields: 5 } }).error, null, '5 fields of 5');
  expectBadRequest(t, run([body(BOUNDARY, fields(6))], { limits: { maxFields: 5 } }), /more than 5 fields/);

  expectBadRequest(t, run([body(BOUNDARY, [...fields(3), ...files(3)])], { limits: { maxParts: 5 } }), /more than 5 parts/);
  const many = run(chunkBy(body(BOUNDARY, fields(1001)), [65536]), { limits: { maxFields: 5000 } });
  expectBadRequest(t, many, /more than 1000 parts/);
});

t.test('field sizes are limited, one by one and in total', async (t) => {
  const ok = run([body(BOUNDARY, [{ name: 'a', data: 'x'.repeat(100) }, { name: 'file', data: 'f' }])], { limits: { maxFieldBytes: 100 } });
  t.equal(ok.error, null, 'exactly at the limit');
  expectBadRequest(t, run([body(BOUNDARY, [{ name: 'a', data: 'x'.repeat(101) }])], { limits: { maxFieldBytes: 100 } }), /Field "a" is larger than 100 bytes/);
  expectBadRequest(t, run(chunkBy(body(BOUNDARY, [{ name: 'big', data: 'x'.repeat(1 << 20) }]), [65536])), /Field "big" is larger than 65536 bytes/);
  const total = Array.from({ length: 5 }, (_, i) => ({ name: `f${i}`, data: 'z'.repeat(60 * 1024) }));
  expectBadRequest(t, run(chunkBy(body(BOUNDARY, total), [65536])), /larger than 262144 bytes in total/);
});

// ---- consumer contract

t.test('fileData chunks are views of the written chunk (no copy) and stay intact after later writes', async (t) => {
  const content = randomContent(10_000, 5, BOUNDARY);
  const payload = body(BOUNDARY, [{ name: 'file', fileName: 'a', data: content }]);
  const chunks = chunkBy(payload, [1000]);
  const views: Buffer[] = [];
  const outcome = run(chunks, { onData: (chunk) => void views.push(chunk) });
  t.ok(fileData(outcome, 0).equals(content));
  const buffers = new Set(chunks.map((chunk) => chunk.buffer));
  t.ok(views.filter((view) => buffers.has(view.buffer as ArrayBuffer)).length >= views.length - 10, 'all but held-back delimiter bytes are views');
  t.ok(Buffer.concat(views).equals(content), 'the kept chunks still hold the bytes');

  // A body where a partial delimiter is held back at a chunk's end many times.
  const near = Buffer.from(`\r\n--${BOUNDARY}`.slice(0, -1));
  const tricky = Buffer.concat(Array.from({ length: 200 }, (_, i) => Buffer.concat([near, Buffer.from([i % 2 === 0 ? 0 : 255, i])])));
  const trickyBody = body(BOUNDARY, [{ name: 'file', fileName: 'a', data: tricky }]);
  for (const size of [near.length, near.length + 1, 5, 13]) {
    const kept: Buffer[] = [];
    run(chunkBy(trickyBody, [size]), { onData: (chunk) => void kept.push(chunk) });
    t.ok(Buffer.concat(kept).equals(tricky), `chunks of ${size}`);
  }
});

t.test('a throw from a callback is reported through error() as is, and nothing follows', async (t) => {
  const payload = body(BOUNDARY, [
    { name: 'file', fileName: 'a', data: randomContent(5000, 6, BOUNDARY) },
    { name: 'second', fileName: 'b', data: 'more' },
  ]);
  const problem = new Error('storage quota exceeded');
  let calls = 0;
  const outcome = run(chunkBy(payload, [512]), {
    onData: () => {
      calls += 1;
      if (calls === 3) throw problem;
    },
  });
  t.equal(outcome.error, problem, 'the very error');
  t.same(outcome.log, ['start:file', 'data', 'error']);
  t.equal(calls, 3, 'no fileData after the throw');
  t.same(outcome.violations, []);
  const fromStart = run([payload], {
    accept: () => {
      throw problem;
    },
  });
  t.equal(fromStart.error, problem, 'a throw from fileStart');
  t.same(fromStart.log, ['error']);
});

t.test('destroy() from a callback stops everything; a late end() does nothing', async (t) => {
  const log: string[] = [];
  const parser: MultipartParser = new MultipartParser(BOUNDARY, {
    fileStart: () => {
      log.push('start');
      return true;
    },
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
  for (const chunk of chunkBy(payload, [1000])) parser.write(chunk);
  parser.end();
  t.same(log, ['start', 'data']);
});

t.test('constructing the parser takes a boundary from multipartBoundary()', async (t) => {
  const boundary = multipartBoundary(CONTENT_TYPE);
  t.equal(boundary, BOUNDARY);
  t.equal(run([body(boundary, [{ name: 'file', fileName: 'x', data: 'X' }])]).error, null);
});
