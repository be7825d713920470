import fc from 'fast-check';
import t from 'tap';
import type { Test } from 'tap';
import type { ServiceError } from '../../src/errors/service-error.ts';
import { Base64StreamDecoder } from '../../src/uploads/parsers/base64-decoder.ts';
import type { FileStart } from '../../src/uploads/parsers/body-parser.ts';
import { JsonUploadParser, type JsonUploadLimits } from '../../src/uploads/parsers/json-upload-parser.ts';
import { chunkBy, isBadRequest, prng, randomChunks, record, splitAt, summary, type RecordOptions, type Recording } from '../helpers/body-parser-events.ts';

// ---- helpers

function randomBytes(size: number, seed: number): Buffer {
  const random = prng(seed);
  const out = Buffer.alloc(size);
  for (let i = 0; i < size; i++) out[i] = Math.floor(random() * 256);
  return out;
}

interface RunOptions extends RecordOptions {
  limits?: Partial<JsonUploadLimits>;
}

function run(chunks: Buffer[], options: RunOptions = {}): Recording {
  return record((events) => new JsonUploadParser(events, options.limits), chunks, options);
}

const parse = (text: string | Buffer, options?: RunOptions): Recording => run([typeof text === 'string' ? Buffer.from(text) : text], options);
const fileBytes = (outcome: Recording): Buffer => outcome.files[0]?.data ?? Buffer.alloc(0);
const infoOf = (outcome: Recording): FileStart | null => outcome.files[0]?.info ?? null;

function expectBadRequest(t: Test, outcome: Recording, pattern: RegExp, label?: string): void {
  const what = label ? `${label}: ` : '';
  t.ok(isBadRequest(outcome.error), `${what}a 400 (got ${String(outcome.error)})`);
  t.match((outcome.error as Error | null)?.message, pattern, `${what}message`);
  t.equal(outcome.log.filter((entry) => entry === 'error').length, 1, `${what}error() once`);
  t.notOk(outcome.log.includes('finish'), `${what}no finish()`);
  t.same(outcome.violations, [], `${what}the event contract held`);
}

/** Wraps a base64 text at 76 characters with CRLF, as MIME does. */
const mimeWrap = (base64: string): string => base64.replace(/.{76}/g, '$&\r\n');

const info = (declaredType: string | null, fileName: string | null = null): FileStart => ({ fieldName: null, fileName, declaredType });

// ---- round trips

t.test('decoded bytes round-trip exactly for data URIs and bare base64, whatever the chunking and key order', (t) => {
  const sizes = [0, 1, 2, 3, 300 * 1024, 3 * 1024 * 1024];
  const forms: Array<[string, (b64: string) => string, string | null]> = [
    ['data URI', (b64) => `data:image/png;base64,${b64}`, 'image/png'],
    ['data URI without a type', (b64) => `data:;base64,${b64}`, null],
    ['bare base64', (b64) => b64, null],
  ];
  const expectedFields = { fileName: 'a.png', public: true, folder: 'x/y', folderId: null, tags: ['a', 'b'] };
  for (const [index, size] of sizes.entries()) {
    const content = randomBytes(size, 10 + index);
    const base64 = content.toString('base64');
    for (const [form, wrap, type] of forms) {
      const file = JSON.stringify(wrap(base64));
      const bodies = [
        [`{"file":${file},"fileName":"a.png","public":true,"folder":"x/y","folderId":null,"tags":["a","b"]}`, info(type)],
        [`{ "tags" : [ "a" , "b" ] ,\n "fileName":"a.png", "file" : ${file}, "public":true,"folder":"x/y","folderId":null }\n`, info(type, 'a.png')],
      ] as const;
      for (const [order, [text, expectedInfo]] of bodies.entries()) {
        const payload = Buffer.from(text);
        const chunkings: Array<[string, Buffer[]]> = [
          ['whole', [payload]],
          ['4096 bytes', chunkBy(payload, [4096])],
          ['random up to 64 KiB', randomChunks(payload, size + order, 65536)],
        ];
        if (size < 1024) chunkings.push(['1 byte', chunkBy(payload, [1])]);
        if (size <= 300 * 1024) chunkings.push(['7 bytes', chunkBy(payload, [7])], ['random up to 100', randomChunks(payload, size + 7, 100)]);
        for (const [label, chunks] of chunkings) {
          const what = `${size} bytes, ${form}, order ${order + 1}, ${label}`;
          const outcome = run(chunks);
          if (outcome.error) {
            t.fail(`${what}: ${String(outcome.error)}`);
            continue;
          }
          t.same(outcome.log, ['start:null', ...(size > 0 ? ['data'] : []), 'end', 'finish'], `${what}: events`);
          t.same(infoOf(outcome), expectedInfo, `${what}: info (the fileName when it came first)`);
          t.ok(fileBytes(outcome).equals(content), `${what}: bytes`);
          t.same(outcome.fields, expectedFields, `${what}: fields`);
        }
      }
    }
  }
  t.end();
});

t.test('MIME line breaks, spaces, JSON escapes (\\/, \\u0041, \\r\\n) inside the base64 are fine', (t) => {
  const content = randomBytes(5000, 3);
  const base64 = content.toString('base64');
  const variants: Array<[string, string]> = [
    ['CRLF every 76', JSON.stringify(mimeWrap(base64))],
    ['LF every 76 and a trailing newline', JSON.stringify(base64.replace(/.{76}/g, '$&\n') + '\n')],
    ['spaces', JSON.stringify(base64.replace(/.{10}/g, '$& '))],
    ['escaped slashes', JSON.stringify(base64).replace(/\//g, '\\/')],
    ['unicode escapes', JSON.stringify(base64).replace(/A/g, '\\u0041')],
    ['whitespace around the padding', JSON.stringify(`data:image/png;base64,\r\n${base64.slice(0, -2)} ${base64.slice(-2, -1)}\r\n${base64.slice(-1)}\r\n`)],
  ];
  for (const [label, file] of variants) {
    const payload = Buffer.from(`{"file":${file}}`);
    for (const chunks of [[payload], chunkBy(payload, [1]), chunkBy(payload, [77])]) {
      const outcome = run(chunks);
      t.equal(outcome.error, null, `${label}: no error`);
      t.ok(fileBytes(outcome).equals(content), `${label}: bytes (chunks of ${chunks[0]!.length})`);
    }
  }
  t.end();
});

t.test('the data URI header may be split at any position', (t) => {
  const cases: Array<[string, string | null, Buffer]> = [
    ['data:image/png;base64,QUJDRA==', 'image/png', Buffer.from('ABCD')],
    ['DATA:Image/SVG+XML;charset=utf-8;name=a.svg;BASE64,QUJD', 'image/svg+xml', Buffer.from('ABC')],
    ['data:;base64,QUI=', null, Buffer.from('AB')],
    ['data:image/png;base64,', 'image/png', Buffer.alloc(0)],
    ['dataAAAA', null, Buffer.from('dataAAAA', 'base64')],
    ['datA', null, Buffer.from('datA', 'base64')],
    ['', null, Buffer.alloc(0)],
  ];
  for (const [file, type, bytes] of cases) {
    const payload = Buffer.from(`{"fileName":"n","file":"${file}","tags":[]}`);
    const start = payload.indexOf('"file"');
    let failures = 0;
    for (let split = start; split <= start + file.length + 10; split++) {
      const outcome = run(splitAt(payload, [split]));
      if (outcome.error || JSON.stringify(infoOf(outcome)) !== JSON.stringify(info(type, 'n')) || !fileBytes(outcome).equals(bytes)) {
        failures += 1;
        t.fail(`${file} split at ${split}: ${summary(outcome)}`);
      }
    }
    const byByte = run(chunkBy(payload, [1]));
    t.same([infoOf(byByte), fileBytes(byByte).equals(bytes), byByte.fields], [info(type, 'n'), true, { fileName: 'n', tags: [] }], `${JSON.stringify(file)} byte by byte`);
    t.equal(failures, 0, `${JSON.stringify(file)}: every split`);
  }
  t.end();
});

t.test('every split point of a small body gives the same events; each write delivers what it completed', (t) => {
  const content = randomBytes(200, 4);
  const payload = Buffer.from(`{"tags":["a",{"k":[1,-2.5e3,true,false,null]}],"file":"data:image/gif;base64,${mimeWrap(content.toString('base64')).replace(/\r\n/g, '\\r\\n')}","fileName":"f.gif"}`);
  const expected = run([payload]);
  t.same(expected.log, ['start:null', 'data', 'end', 'finish']);
  t.same(expected.fields, { tags: ['a', { k: [1, -2500, true, false, null] }], fileName: 'f.gif' });
  const whole = summary(expected);
  let failures = 0;
  for (let split = 0; split <= payload.length; split++) {
    for (const chunks of [splitAt(payload, [split]), splitAt(payload, [split, split + 1]), splitAt(payload, [split, split + 5])]) {
      if (summary(run(chunks)) !== whole) {
        failures++;
        t.fail(`split at ${split}: ${summary(run(chunks))}`);
      }
    }
  }
  t.equal(failures, 0, `${payload.length + 1} split points`);
  // Synchronous delivery: after each write, all whole quanta written so far have been decoded.
  const lags: number[] = [];
  const dataStart = payload.indexOf(',', payload.indexOf('data:')) + 1;
  run(chunkBy(payload, [9]), {
    afterWrite: (recording, written) => {
      const text = payload.subarray(dataStart, Math.max(dataStart, Math.min(written, payload.length))).toString().split('"')[0]!.replace(/\\r\\n|\\r|\\/g, '');
      lags.push(Math.floor(text.length / 4) * 3 - fileBytes(recording).length);
    },
  });
  t.ok(lags.every((lag) => lag >= 0 && lag <= 3), 'at most the last partial quantum (and the final one) is pending after a write');
  t.end();
});

t.test('random split points of generated bodies give the events of the whole body', (t) => {
  const memberArb = fc.oneof(
    fc.tuple(fc.constantFrom('fileName', 'tags', 'public', 'folder', 'x', '__proto__', 'fi\\u006ce'), fc.jsonValue({ maxDepth: 3 })).map(([key, value]) => `"${key}":${JSON.stringify(value)}`),
    fc.tuple(fc.uint8Array({ maxLength: 200 }), fc.constantFrom('data:image/png;base64,', '', 'data:;base64,'), fc.boolean()).map(([bytes, prefix, wrap]) => {
      const b64 = Buffer.from(bytes).toString('base64');
      return `"file":${JSON.stringify(prefix + (wrap ? b64.replace(/.{10}/g, '$&\r\n') : b64)).replace(/\//g, '\\/')}`;
    }),
  );
  const bodyArb = fc.tuple(fc.array(memberArb, { maxLength: 5 }), fc.constantFrom('', ' ', '\n\t')).map(([members, space]) => `${space}{${members.join(`,${space}`)}}${space}`);
  // Also bodies broken in one place: truncated, a byte changed, or a byte inserted.
  const mutatedArb = fc.tuple(bodyArb, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('cut', 'change', 'insert')).map(([text, at, byte, how]) => {
    const bytes = Buffer.from(text);
    const i = at % (bytes.length + 1);
    if (how === 'cut') return bytes.subarray(0, i);
    if (how === 'insert') return Buffer.concat([bytes.subarray(0, i), Buffer.from([byte]), bytes.subarray(i)]);
    const copy = Buffer.from(bytes);
    if (i < copy.length) copy[i] = byte;
    return copy;
  });
  let cases = 0;
  fc.assert(
    fc.property(fc.oneof(bodyArb.map((text) => Buffer.from(text)), mutatedArb), fc.array(fc.nat(4000), { maxLength: 8 }), (payload, cuts) => {
      cases++;
      const wholeRecording = run([payload]);
      const whole = summary(wholeRecording);
      const split = summary(run(splitAt(payload, cuts.map((cut) => cut % (payload.length + 1)))));
      if (split !== whole) throw new Error(`split differs for ${JSON.stringify(payload.toString('latin1'))}:\n${whole}\n${split}`);
      if (wholeRecording.violations.length > 0) throw new Error(`contract: ${whole}`);
      if (wholeRecording.error !== null && !isBadRequest(wholeRecording.error)) throw new Error(`not a 400: ${whole}`);
      // What JSON.parse accepts with one string `file` is accepted, and the other way round.
      let parsed: any;
      try {
        parsed = JSON.parse(payload.toString('utf8'));
      } catch {
        parsed = undefined;
      }
      const fine = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) && typeof parsed.file === 'string';
      if (wholeRecording.error === null && !fine) throw new Error(`accepted what JSON.parse refuses: ${JSON.stringify(payload.toString('latin1'))}`);
    }),
    { seed: 18_2, numRuns: 3000 },
  );
  t.equal(cases, 3000);
  t.end();
});

t.test('members other than file: any JSON value, last duplicate wins, __proto__ stays an own property', (t) => {
  const outcome = parse(
    '{"file":"","a":1,"a":2,"__proto__":{"x":1},"nested":{"deep":[[[[[[["seven"]]]]]]]},"s":"\\u00e9\\n\\"q\\"","n":-0.5e-2,"big":12345678901234567890,"e":{},"l":[]}',
  );
  t.equal(outcome.error, null);
  const fields = outcome.fields!;
  t.equal(fields.a, 2);
  t.ok(Object.hasOwn(fields, '__proto__'));
  t.equal(Object.getPrototypeOf(fields), Object.prototype);
  t.same(fields.__proto__, { x: 1 });
  t.same(fields.nested, { deep: [[[[[[['seven']]]]]]] });
  t.equal(fields.s, 'é\n"q"');
  t.equal(fields.n, -0.005);
  t.equal(fields.big, 12345678901234567890);
  t.same([fields.e, fields.l], [{}, []]);
  t.notOk('file' in fields, 'the file is not among the fields');
  t.end();
});

t.test('no file member: MissingArgument file at end(), fileStart never called', (t) => {
  for (const text of ['{"fileName":"a.png","tags":["x"]}', '{}', '{"File":"QUJD"}']) {
    const outcome = parse(text);
    t.same(outcome.log, ['error'], text);
    t.equal((outcome.error as ServiceError).messageKey, 'error.missingArgument.file', text);
  }
  t.end();
});

// ---- errors

t.test('the body must be a JSON object', (t) => {
  for (const text of ['[]', '"QUJD"', '1', 'null', 'true', '', '   \n', '[{"file":"QUJD"}]', '\ufeff{"file":"QUJD"}']) {
    expectBadRequest(t, parse(text), /^The request body must be a JSON object$/, JSON.stringify(text));
  }
  t.end();
});

t.test('malformed JSON is a 400', (t) => {
  for (const text of ['{"file":"QUJD",}', '{file:"QUJD"}', '{"file" "QUJD"}', '{"a":tru}', '{"a":01}', '{"a":"x\u0001"}', '{"a":[1,]}', '{"a":1 "b":2}', '{"a":"\\x"}', '{"a":-}', "{'a':1}", '{"a":}', '{"a":]}', '{"a\u0001":1}', '{"file":"QU\\xJD"}', '{"file":"QU\\u00zzJD"}', '{"file":"QU\nJD"}', '{"a":1,,"b":2}', '{,"a":1}']) {
    expectBadRequest(t, parse(text), /^The JSON body is malformed/, text);
  }
  t.end();
});

t.test('a truncated body is a 400, wherever it is cut', (t) => {
  const payload = Buffer.from('{"fileName":"a","file":"data:image/png;base64,QUJD","tags":["x",1.5,true,null]} ');
  for (let cut = 0; cut < payload.length - 1; cut++) {
    const outcome = parse(payload.subarray(0, cut));
    const pattern = cut === 0 ? /must be a JSON object/ : /^The JSON body is truncated$/;
    if (!isBadRequest(outcome.error) || !pattern.test(outcome.error.message) || outcome.log.includes('finish')) {
      t.fail(`cut at ${cut}: ${summary(outcome)}`);
    }
  }
  t.equal(parse(payload).error, null, 'the whole body is fine');
  expectBadRequest(t, parse('{"file":"QUJD"'), /truncated/);
  t.end();
});

t.test('file must be a string, given once', (t) => {
  for (const value of ['12', 'null', '{}', '["QUJD"]', 'true', '{"data":"QUJD"}']) {
    expectBadRequest(t, parse(`{"fileName":"a","file":${value}}`), /^file must be a string$/, value);
  }
  expectBadRequest(t, parse('{"file":"QUJD","fileName":"a","file":"QUJD"}'), /more than one "file" member/);
  expectBadRequest(t, parse('{"file":"QUJD","file":1}'), /more than one "file" member/);
  expectBadRequest(t, parse('{"fi\\u006ce":"QUJD","file":"QUJD"}'), /more than one "file" member/, 'an escaped key is the same key');
  t.end();
});

t.test('nesting is limited', (t) => {
  const nest = (depth: number): string => '['.repeat(depth) + '1' + ']'.repeat(depth);
  t.equal(parse(`{"file":"","a":${nest(8)}}`).error, null, '8 levels');
  expectBadRequest(t, parse(`{"a":${nest(9)}}`), /"a" nests deeper than 8 levels/);
  expectBadRequest(t, parse(`{"o":{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{}}}}}}}}}}`), /"o" nests deeper than 8 levels/);
  expectBadRequest(t, parse(`{"a":${'['.repeat(1_000_000)}`), /nests deeper/, 'a million brackets are refused at the ninth');
  t.equal(parse(`{"file":"","a":${nest(3)}}`, { limits: { maxFieldDepth: 3 } }).error, null);
  expectBadRequest(t, parse(`{"a":${nest(4)}}`, { limits: { maxFieldDepth: 3 } }), /deeper than 3 levels/);
  t.equal(parse(`{"file":"","a":"[[[[[[[[[[[[[[[[[[["}`).error, null, 'brackets in a string do not count');
  t.end();
});

t.test('data after the object is a 400; whitespace is fine', (t) => {
  for (const tail of ['x', '{}', ' 1', ',', '\n"more"', ']']) {
    expectBadRequest(t, parse(`{"file":"QUJD"}${tail}`), /^The JSON body has data after its object$/, JSON.stringify(tail));
  }
  t.equal(parse('{"file":"QUJD"} \r\n\t ').error, null);
  t.end();
});

t.test('invalid base64 is a 400, at any position, in small and large files', (t) => {
  const valid = randomBytes(90_000, 5).toString('base64'); // 120000 characters: several 64 Ki blocks
  const bad: Array<[string, string]> = [
    ['url-safe -', '-'],
    ['url-safe _', '_'],
    ['punctuation', '!'],
    ['dot', '.'],
    ['tab', '\t'],
    ['U+0141 (its low byte is "A")', '\u0141'],
    ['U+00E9', 'é'],
    ['NUL', '\u0000'],
    ['padding in the middle', '='],
  ];
  for (const [label, character] of bad) {
    for (const at of [0, 1, 2, 3, 77, 65_535, 65_536, 119_996]) {
      const text = valid.slice(0, at) + character + valid.slice(at + 1);
      const payload = Buffer.from(JSON.stringify({ file: text }));
      for (const chunks of [[payload], chunkBy(payload, [4096])]) {
        const outcome = run(chunks);
        if (!isBadRequest(outcome.error) || outcome.error.message !== 'file is not valid base64' || outcome.log.includes('end')) {
          t.fail(`${label} at ${at}: ${summary(outcome)}`);
        }
      }
    }
  }
  const small: Array<[string, string]> = [
    ['3 characters', 'QUJ'],
    ['5 characters', 'QUJDR'],
    ['1 character', 'Q'],
    ['A===', 'A==='],
    ['====', '===='],
    ['padding after a whole quantum', 'QUJD='],
    ['incomplete padding', 'QQ='],
    ['data after padding', 'QQ==QUJD'],
    ['padding then more padding', 'QQ==='],
    ['data after padding and whitespace', 'QUI=\r\nQUJD'],
    ['only whitespace then a stray character', '\r\n \r\n*'],
    ['data URI with an invalid payload', 'data:image/png;base64,QUJD*'],
    ['an escaped character outside the alphabet', 'QU\\u0141D'],
    ['an escaped quote', 'QU\\"D'],
  ];
  for (const [label, text] of small) {
    const payload = Buffer.from(`{"file":${text.includes('\\') ? `"${text}"` : JSON.stringify(text)}}`);
    for (const chunks of [[payload], chunkBy(payload, [1])]) {
      expectBadRequest(t, run(chunks), /^file is not valid base64$/, `${label}, chunks of ${chunks[0]!.length}`);
    }
  }
  t.end();
});

t.test('the data URI must be base64 and well-formed', (t) => {
  const cases: Array<[string, RegExp]> = [
    ['data:text/plain,hello', /must be a base64 data URI/],
    ['data:image/png;charset=x,QUJD', /must be a base64 data URI/],
    ['data:base64,QUJD', /must be a base64 data URI/],
    ['data:,QUJD', /must be a base64 data URI/],
    ['data:image/png;base64', /not a valid data URI/],
    ['data:', /not a valid data URI/],
    [`data:image/png;x=${'a'.repeat(300)};base64,QUJD`, /data URI header that is too long/],
    [`data:${'a'.repeat(100_000)}`, /data URI header that is too long/],
    ['data:image png;base64,QUJD', /invalid data URI media type/],
    ['data:png;base64,QUJD', /invalid data URI media type/],
    ['data:image/png;name;base64,QUJD', /invalid data URI parameter/],
    ['data:image/png\t;base64,QUJD', /control character/],
  ];
  for (const [file, pattern] of cases) {
    const payload = Buffer.from(`{"file":"${file}"}`);
    for (const chunks of [[payload], chunkBy(payload, [1]), chunkBy(payload, [4096])]) {
      expectBadRequest(t, run(chunks), pattern, `${file.slice(0, 40)}, chunks of ${chunks[0]!.length}`);
    }
  }
  t.end();
});

t.test('sizes of the other members are limited', (t) => {
  t.equal(parse(JSON.stringify({ file: '', a: 'x'.repeat(60_000) })).error, null, 'a 60 KB value');
  expectBadRequest(t, parse(JSON.stringify({ fileName: 'x'.repeat(70_000) })), /"fileName" is larger than 65536 bytes/);
  expectBadRequest(t, parse(JSON.stringify({ tags: Array.from({ length: 40_000 }, () => 'ab') })), /"tags" is larger than 65536 bytes/);
  expectBadRequest(t, parse(JSON.stringify({ [`k${'x'.repeat(70_000)}`]: 1 })), /A JSON key is longer than 65536 bytes/);
  expectBadRequest(t, parse(`{"n":${'9'.repeat(70_000)}}`), /"n" is larger than 65536 bytes/);
  expectBadRequest(t, parse(JSON.stringify({ s: 'é'.repeat(33_000) })), /"s" is larger than 65536 bytes/, 'counted in UTF-8 bytes');
  const many = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`f${i}`, 'z'.repeat(60_000)]));
  expectBadRequest(t, parse(JSON.stringify(many)), /larger than 262144 bytes in total/);
  expectBadRequest(t, parse(JSON.stringify({ a: 'x'.repeat(101) }), { limits: { maxFieldBytes: 100 } }), /"a" is larger than 100 bytes/);
  // The file string is not counted.
  const big = parse(JSON.stringify({ file: randomBytes(600_000, 6).toString('base64'), fileName: 'f' }));
  t.equal(big.error, null, 'a file larger than every member limit');
  t.end();
});

// ---- consumer contract

t.test('a skipped file is still validated but delivers nothing', (t) => {
  const ok = parse('{"file":"data:image/png;base64,QUJD","fileName":"a"}', { accept: () => false });
  t.same(ok.log, ['start:null', 'finish']);
  t.equal(fileBytes(ok).length, 0);
  t.same(ok.fields, { fileName: 'a' });
  expectBadRequest(t, parse('{"file":"QUJD*"}', { accept: () => false }), /not valid base64/);
  t.end();
});

t.test('a throw from a callback is reported through error() as is; nothing follows', (t) => {
  const payload = Buffer.from(JSON.stringify({ file: randomBytes(30_000, 9).toString('base64'), fileName: 'a' }));
  const problem = new Error('team limit');
  let calls = 0;
  const outcome = run(chunkBy(payload, [1000]), {
    onData: () => {
      if (++calls === 2) throw problem;
    },
  });
  t.equal(outcome.error, problem);
  t.same(outcome.log, ['start:null', 'data', 'error']);
  t.equal(calls, 2);
  t.same(outcome.violations, []);
  const fromStart = parse('{"file":"QUJD"}', {
    accept: () => {
      throw problem;
    },
  });
  t.equal(fromStart.error, problem, 'fileStart threw');
  t.same(fromStart.log, ['error']);
  t.end();
});

t.test('destroy() from a callback stops everything', (t) => {
  const log: string[] = [];
  const parser: JsonUploadParser = new JsonUploadParser({
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
  const payload = Buffer.from(JSON.stringify({ file: 'QUJD'.repeat(50_000), fileName: 'x' }));
  for (const chunk of chunkBy(payload, [10_000])) parser.write(chunk);
  parser.end();
  t.same(log, ['start', 'data']);
  t.end();
});

t.test('Base64StreamDecoder: the URL-safe alphabet is refused in the padded last quantum too, whole or split', (t) => {
  for (const text of ['QUJD-w==', 'QUJDRA_=', 'QU-=', 'Q_==', 'QUJDRA=A', 'QUJD=QUJD', 'QQ===']) {
    for (let at = 0; at <= text.length; at++) {
      const decoder = new Base64StreamDecoder(() => {});
      t.throws(() => {
        decoder.write(text.slice(0, at));
        decoder.write(text.slice(at));
        decoder.end();
      }, { message: 'file is not valid base64', status: 400 }, `${text} split at ${at}`);
    }
  }
  const out: Buffer[] = [];
  const decoder = new Base64StreamDecoder((bytes) => out.push(bytes));
  for (const piece of ['QUJD', 'RA', '=', '=']) decoder.write(piece);
  decoder.end();
  t.same(Buffer.concat(out), Buffer.from('ABCD'));
  t.end();
});

t.test('Base64StreamDecoder: random whitespace and random splits decode exactly; one bad character anywhere is refused', (t) => {
  const random = prng(42);
  for (let round = 0; round < 300; round++) {
    const content = randomBytes(Math.floor(random() * 300), round);
    let text = content.toString('base64');
    if (round % 2 === 0) text = text.replace(/./g, (c) => (random() < 0.1 ? ['\r\n', ' ', '\n', '\r'][Math.floor(random() * 4)]! + c : c));
    const pieces: string[] = [];
    for (let at = 0; at < text.length; ) {
      const size = 1 + Math.floor(random() * 9);
      pieces.push(text.slice(at, at + size));
      at += size;
    }
    const out: Buffer[] = [];
    const decoder = new Base64StreamDecoder((bytes) => out.push(bytes));
    for (const piece of pieces) decoder.write(piece);
    decoder.end();
    if (!Buffer.concat(out).equals(content)) t.fail(`round ${round}: bytes differ`);

    if (text.replace(/\s/g, '').length === 0) continue;
    const at = Math.floor(random() * text.length);
    // '-' and '_' are what Node's own decoder would quietly take (the URL-safe alphabet).
    const broken = text.slice(0, at) + ['*', '-', '_'][round % 3] + text.slice(at + 1);
    const refused = new Base64StreamDecoder(() => {});
    t.throws(() => {
      for (const piece of [broken.slice(0, at), broken.slice(at)]) refused.write(piece);
      refused.end();
    }, { message: 'file is not valid base64', status: 400 }, `round ${round}: a bad character at ${at}`);
  }
  t.end();
});

t.test('Base64StreamDecoder: long pieces after a carried quantum decode exactly, padding and whitespace included', (t) => {
  const random = prng(7);
  for (let round = 0; round < 200; round++) {
    const content = randomBytes(1000 + Math.floor(random() * 5000), round);
    let text = content.toString('base64');
    if (round % 2 === 0) text = text.replace(/.{76}/g, '$&\r\n');
    const out: Buffer[] = [];
    const decoder = new Base64StreamDecoder((bytes) => out.push(bytes));
    // Pieces of 9 characters and more, cut so that 1-3 characters are carried into most of them.
    for (let at = 0; at < text.length; ) {
      const size = 9 + Math.floor(random() * 700);
      decoder.write(text.slice(at, at + size));
      at += size;
    }
    decoder.end();
    if (!Buffer.concat(out).equals(content)) t.fail(`round ${round}: bytes differ`);
  }
  t.throws(() => {
    const decoder = new Base64StreamDecoder(() => {});
    decoder.write('QUJ'); // carried
    decoder.write('D' + 'QUJD'.repeat(10) + '*' + 'QUJD'.repeat(10));
  }, { message: 'file is not valid base64', status: 400 }, 'a bad character in the rest of a long piece is refused');
  t.throws(() => {
    const decoder = new Base64StreamDecoder(() => {});
    decoder.write('QU'); // carried
    decoder.write('I=' + 'QUJD'.repeat(10));
  }, { message: 'file is not valid base64', status: 400 }, 'data after the padding that completed the carried quantum is refused');
  t.end();
});

t.test('a file string longer than several blocks in one chunk decodes exactly; a bad character deep in it is refused', (t) => {
  const content = randomBytes(400 * 1024 + 2, 3);
  const base64 = content.toString('base64');
  const body = (file: string) => Buffer.from(JSON.stringify({ fileName: 'big.bin', file: `data:application/octet-stream;base64,${file}` }));
  const whole = parse(body(base64));
  t.equal(whole.error, null);
  t.ok(fileBytes(whole).equals(content), 'the bytes as sent, from one chunk');
  const split = run(chunkBy(body(base64), [300 * 1024 + 1]));
  t.ok(fileBytes(split).equals(content), 'and from two chunks cut inside a block');
  const at = 200 * 1024 + 5; // past the first few 64 KiB blocks of the run
  expectBadRequest(t, parse(body(base64.slice(0, at) + '*' + base64.slice(at + 1))), /not valid base64/, 'a bad character at 200 KiB');
  t.end();
});
