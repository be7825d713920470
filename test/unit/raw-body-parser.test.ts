import t from 'tap';
import { RawBodyParser } from '../../src/uploads/parsers/raw-body-parser.ts';
import type { BodyParserEvents, FileStart } from '../../src/uploads/parsers/body-parser.ts';
import { record, randomChunks } from '../helpers/body-parser-events.ts';

const FILE: FileStart = { fieldName: null, fileName: 'shot.png', declaredType: 'image/png' };
const raw = (file = FILE) => (events: BodyParserEvents) => new RawBodyParser(file, events);

t.test('the body is the file, however it is cut', (t) => {
  const body = Buffer.from('0123456789'.repeat(1000));
  for (const seed of [1, 2, 3]) {
    const recording = record(raw(), randomChunks(body, seed, 700));
    t.same(recording.violations, []);
    t.same(recording.files.map((file) => file.info), [FILE], 'one file, as the request named it');
    t.same(recording.files[0]!.data, body);
    t.ok(recording.files[0]!.ended);
    t.same(recording.fields, {});
    t.equal(recording.log[0], 'start:null');
    t.equal(recording.log.at(-1), 'finish');
  }
  t.end();
});

t.test('an empty body is an empty file; empty chunks are no data', (t) => {
  const recording = record(raw(), [Buffer.alloc(0), Buffer.alloc(0)]);
  t.same(recording.violations, []);
  t.same(recording.log, ['start:null', 'end', 'finish']);
  t.equal(recording.files[0]!.data.length, 0);
  t.end();
});

t.test('a file the consumer skips ends with no file; a callback that throws ends the parse with error()', (t) => {
  const skipped = record(raw(), [Buffer.from('abc')], { accept: () => false });
  t.same(skipped.violations, []);
  t.same(skipped.log, ['start:null', 'finish']);
  const failure = new Error('refused');
  const thrown = record(raw(), [Buffer.from('abc'), Buffer.from('def')], { onData: () => { throw failure; } });
  t.same(thrown.violations, []);
  t.equal(thrown.error, failure);
  t.same(thrown.log, ['start:null', 'data', 'error']);
  t.end();
});
