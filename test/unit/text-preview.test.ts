import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import t from 'tap';
import { LastLines, FirstLines, LineSplitter, type Line } from '../../src/domain/media/text-lines.ts';
import {
  GZIP_TAIL_BOUND, MAX_LINE_CHARS, MAX_PREVIEW_CHARS, PREVIEW_READ_BOUND, previewEncoding, readTextPreview, type RangeReader, type TextPreviewOptions,
} from '../../src/domain/media/text-preview.ts';

/** The lines of a text as the module defines them (docs/api.md). */
function referenceLines(text: string): string[] {
  if (text === '') return [];
  const body = text.endsWith('\n') ? text.slice(0, -1) : text;
  return body.split('\n').map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
}

/** Splits `bytes` in pieces of `pieceSize` and collects every line. */
function splitAll(bytes: Buffer, pieceSize: number, options: { keepLast?: number } = {}): Line[] {
  const lines = options.keepLast ? new LastLines(options.keepLast, MAX_LINE_CHARS) : new FirstLines(Number.MAX_SAFE_INTEGER, MAX_LINE_CHARS);
  const splitter = new LineSplitter(lines.add, { maxLineChars: MAX_LINE_CHARS, atFileStart: true, ...options });
  for (let at = 0; at < bytes.length; at += pieceSize) splitter.push(bytes.subarray(at, at + pieceSize));
  splitter.end('eof');
  return lines.lines;
}

/** A RangeReader over a buffer that records each range asked for. */
function memoryReader(content: Buffer): { read: RangeReader; ranges: [number, number][] } {
  const ranges: [number, number][] = [];
  return {
    ranges,
    read: async (start, end) => {
      ranges.push([start, end]);
      if (start < 0 || end >= content.length || end < start) throw new Error(`range ${start}-${end} outside 0-${content.length - 1}`);
      return content.subarray(start, end + 1);
    },
  };
}

/** Lines of hex that compress to about half. */
function numberedNoise(count: number): string[] {
  return Array.from({ length: count }, (_, index) => `${index} ${createHash('sha256').update(String(index)).digest('hex')}`);
}

function preview(content: Buffer, options: Partial<TextPreviewOptions> = {}) {
  const reader = memoryReader(content);
  const result = readTextPreview(reader.read, { size: content.length, encoding: 'text', lines: 50, from: 'end', ...options });
  return result.then((answer) => ({ ...answer, ranges: reader.ranges }));
}

t.test('lines split in pieces of any size are the text\'s lines (LF, CRLF, no final newline, empty lines, multi-byte characters)', (t) => {
  const texts = ['', '\n', 'a', 'a\n', 'a\nb', 'a\r\nb\r\n', '\n\n', 'é€😀\nx\r\n\r\n€', 'a\rb\n', 'last\r'];
  for (const text of texts) {
    const expected = referenceLines(text);
    for (const pieceSize of [1, 2, 3, 5, 64]) {
      const lines = splitAll(Buffer.from(text), pieceSize);
      t.same(lines.map((line) => line.text), expected, `${JSON.stringify(text)} in pieces of ${pieceSize}`);
      t.ok(lines.every((line) => !line.cut), 'no line cut');
      t.same(splitAll(Buffer.from(text), pieceSize, { keepLast: 2 }).map((line) => line.text), expected.slice(-2), 'the last two');
    }
  }
  t.end();
});

t.test('invalid UTF-8 becomes U+FFFD; a byte order mark at the file start is dropped', (t) => {
  const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('ok '), Buffer.from([0xff, 0xc3]), Buffer.from('\nx'), Buffer.from([0xe2, 0x82])]);
  for (const pieceSize of [1, 4, 100]) {
    t.same(splitAll(bytes, pieceSize).map((line) => line.text), ['ok \ufffd\ufffd', 'x\ufffd'], `pieces of ${pieceSize}`);
  }
  t.end();
});

t.test('a line longer than the limit keeps its first characters and is marked cut; a character is never halved', (t) => {
  const long = `${'€'.repeat(MAX_LINE_CHARS + 10)}\n`;
  const [cutLine] = splitAll(Buffer.from(`${long}short\n`), 1000);
  t.equal(cutLine!.text, '€'.repeat(MAX_LINE_CHARS));
  t.equal(cutLine!.cut, true);
  const emoji = splitAll(Buffer.from(`a${'😀'.repeat(MAX_LINE_CHARS)}\n`), 777)[0]!;
  t.equal(emoji.text, `a${'😀'.repeat((MAX_LINE_CHARS - 2) / 2)}`, 'a surrogate pair is not split at the limit');
  const exact = splitAll(Buffer.from(`${'x'.repeat(MAX_LINE_CHARS)}\r\n`), 3)[0]!;
  t.same(exact, { text: 'x'.repeat(MAX_LINE_CHARS), cut: false }, 'a line of exactly the limit, CRLF: whole');
  t.end();
});

t.test('from=start reads one range for a few lines, and only up to the bound', async (t) => {
  const log = Buffer.from(Array.from({ length: 5000 }, (_, index) => `line ${index}`).join('\n'));
  const first = await preview(log, { from: 'start', lines: 3 });
  t.same(first.lines, ['line 0', 'line 1', 'line 2']);
  t.same(first.ranges, [[0, 16 * 1024 - 1]]);
  t.same([first.truncated, first.bytesRead, first.decompressedBytes], [false, 16 * 1024, null]);

  const all = await preview(Buffer.from('a\r\nb\r\n'), { from: 'start', lines: 10 });
  t.same([all.lines, all.truncated, all.bytesRead], [['a', 'b'], false, 6], 'fewer lines than asked: all of them, not truncated');

  const oneLine = Buffer.alloc(PREVIEW_READ_BOUND * 3, 'y');
  const bounded = await preview(oneLine, { from: 'start', lines: 2 });
  t.equal(bounded.bytesRead, PREVIEW_READ_BOUND);
  t.same([bounded.lines, bounded.cutLines, bounded.truncated], [['y'.repeat(MAX_LINE_CHARS)], [0], true]);
  t.ok(bounded.ranges.every(([, end]) => end < PREVIEW_READ_BOUND), 'no byte past the bound asked for');
});

t.test('from=end reads backwards only as far as the lines need, or up to the bound', async (t) => {
  const lines = Array.from({ length: 20_000 }, (_, index) => `entry ${index} ${'.'.repeat(index % 50)}`);
  const log = Buffer.from(`${lines.join('\n')}\n`);
  const last = await preview(log, { lines: 5 });
  t.same(last.lines, lines.slice(-5));
  t.same(last.ranges, [[log.length - 16 * 1024, log.length - 1]], 'one range at the end');
  t.equal(last.truncated, false);

  const many = await preview(log, { lines: 1000 });
  t.same(many.lines, lines.slice(-1000), 'several ranges backwards');
  t.ok(many.ranges.length > 1);

  const whole = await preview(Buffer.from('only\nthree\nlines'), { lines: 10 });
  t.same([whole.lines, whole.truncated, whole.cutLines], [['only', 'three', 'lines'], false, []]);

  const oneLine = Buffer.concat([Buffer.from('start\n'), Buffer.alloc(PREVIEW_READ_BOUND * 2, 'z'), Buffer.from('\nend\n')]);
  const bounded = await preview(oneLine, { lines: 3 });
  t.equal(bounded.bytesRead, PREVIEW_READ_BOUND);
  t.same([bounded.lines, bounded.cutLines, bounded.truncated], [['z'.repeat(MAX_LINE_CHARS), 'end'], [0], true], 'the line the bound starts in is cut');
  t.ok(bounded.ranges.every(([start]) => start >= oneLine.length - PREVIEW_READ_BOUND));

  t.same((await preview(Buffer.alloc(0))).lines, [], 'an empty file has no line');
});

t.test('a multi-byte character cut by a range boundary decodes whole, or is dropped where reading starts', async (t) => {
  // 3-byte characters with the file size not a multiple of 3: every range boundary from the end cuts a character.
  const text = `${'€'.repeat(40_000)}\n${'€'.repeat(10_000)}\n€€€\n`;
  const content = Buffer.from(text);
  for (const from of ['start', 'end'] as const) {
    const answer = await preview(content, { from, lines: 3 });
    t.notOk(answer.lines.some((line) => line.includes('\ufffd')), `${from}: no replacement character`);
    t.ok(answer.ranges.length > 1, `${from}: more than one range`);
  }
  const boundCut = Buffer.from(`x${'€'.repeat(PREVIEW_READ_BOUND)}`);
  t.not((boundCut.length - PREVIEW_READ_BOUND) % 3, 1, 'the bound starts inside a character');
  const end = await preview(boundCut, { lines: 1 });
  t.same([end.lines[0]!.slice(0, 3), end.truncated], ['€€€', true], 'from the end: the cut character\'s bytes dropped');
  const start = await preview(Buffer.from(`x${'€'.repeat(PREVIEW_READ_BOUND)}`), { from: 'start', lines: 1 });
  t.notOk(start.lines[0]!.includes('\ufffd'), 'from the start: no replacement character where the bound cuts');
});

t.test('the answer holds at most MAX_PREVIEW_CHARS characters', async (t) => {
  // 1000 lines of 4000 characters, gzipped: within the decompression bound, beyond the characters bound.
  const line = 'q'.repeat(4000);
  const content = gzipSync(Buffer.from(`${Array.from({ length: 1000 }, () => line).join('\n')}\n`));
  const answer = await preview(content, { encoding: 'gzip', lines: 1000 });
  t.equal(answer.lines.length, Math.floor(MAX_PREVIEW_CHARS / 4000));
  t.equal(answer.truncated, true);
});

t.test('gzip: decompressed from the start, bounded both ways; a damaged stream answers what it held', async (t) => {
  const lines = Array.from({ length: 3000 }, (_, index) => `gz ${index}`);
  const content = gzipSync(Buffer.from(`${lines.join('\r\n')}\r\n`));
  const first = await preview(content, { encoding: 'gzip', from: 'start', lines: 4 });
  t.same([first.lines, first.truncated, first.bytesRead], [lines.slice(0, 4), false, content.length]);
  const last = await preview(content, { encoding: 'gzip', lines: 4 });
  t.same([last.lines, last.truncated], [lines.slice(-4), false]);
  t.equal(last.decompressedBytes, Buffer.byteLength(`${lines.join('\r\n')}\r\n`));

  // Text that compresses little: the first range holds far more than three lines, and nothing further is read.
  const noisy = gzipSync(Buffer.from(numberedNoise(30_000).join('\n')));
  const noisyFirst = await preview(noisy, { encoding: 'gzip', from: 'start', lines: 3 });
  t.same([noisyFirst.lines, noisyFirst.ranges], [numberedNoise(3), [[0, 16 * 1024 - 1]]], 'one range read, none ahead');

  // 64 gzip members of 16 MiB each (1 GiB decompressed, 1 MiB stored).
  const member = gzipSync(Buffer.from('boom\n'.repeat((16 * 1024 * 1024) / 5)));
  const bomb = Buffer.concat(Array.from({ length: 64 }, () => member));
  const bombEnd = await preview(bomb, { encoding: 'gzip', lines: 2 });
  // The bound (8 MiB, not a multiple of 5) ends inside a line: cut.
  t.same([bombEnd.lines, bombEnd.cutLines, bombEnd.truncated, bombEnd.decompressedBytes], [['boom', 'boo'], [1], true, GZIP_TAIL_BOUND]);
  t.ok(bombEnd.bytesRead < bomb.length, `read ${bombEnd.bytesRead} of ${bomb.length} stored bytes`);
  const bombStart = await preview(bomb, { encoding: 'gzip', from: 'start', lines: 2 });
  t.same([bombStart.lines, bombStart.truncated], [['boom', 'boom'], false]);
  t.ok(bombStart.decompressedBytes! <= PREVIEW_READ_BOUND);

  const oneLineBomb = gzipSync(Buffer.alloc(GZIP_TAIL_BOUND * 2, 'w'));
  const noBreak = await preview(oneLineBomb, { encoding: 'gzip', from: 'start', lines: 2 });
  t.same([noBreak.decompressedBytes, noBreak.truncated, noBreak.cutLines], [PREVIEW_READ_BOUND, true, [0]]);

  const damaged = Buffer.from(content);
  damaged.fill(0x55, 200, 260);
  const broken = await preview(damaged, { encoding: 'gzip', from: 'start', lines: 3000 });
  t.equal(broken.truncated, true, 'damage stops the reading');
  t.ok(broken.lines.length < 3000);
  const cutShort = await preview(content.subarray(0, content.length >> 1), { encoding: 'gzip', from: 'start', lines: 3000 });
  t.ok(cutShort.lines.length > 100 && cutShort.lines.length < 3000, 'a file cut short: the lines it holds');
});

t.test('previewEncoding: text types, gzip named as text, nothing else', (t) => {
  t.equal(previewEncoding('text/plain; charset=utf-8', 'server.log'), 'text');
  t.equal(previewEncoding('text/csv; charset=utf-8', 'data.bin'), 'text');
  t.equal(previewEncoding('application/json', 'x.json'), 'text');
  t.equal(previewEncoding('application/x-ndjson', 'x.jsonl'), 'text');
  for (const name of ['server.log.gz', 'a.TXT.gz', 'x.csv.gz', 'server.log.3.gz', 'server.log-20261123.gz']) t.equal(previewEncoding('application/gzip', name), 'gzip', name);
  for (const name of ['backup.tar.gz', 'x.gz', 'server.log']) t.equal(previewEncoding('application/gzip', name), null, name);
  for (const type of ['image/png', 'application/zip', 'application/octet-stream', 'application/pdf']) t.equal(previewEncoding(type, 'x.log'), null, type);
  t.end();
});
