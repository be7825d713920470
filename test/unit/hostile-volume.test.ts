import fc from 'fast-check';
import t from 'tap';
import { parseRange } from '../../src/http/routes/media/file-serving-routes.ts';
import { MAX_SEARCH_LENGTH, MEDIA_TYPES, parseListFilters } from '../../src/domain/media/media.service.ts';
import { MAX_PAGE_SIZE, parsePaging } from '../../src/domain/paging.ts';
import { ServiceError } from '../../src/errors/service-error.ts';
import { checkNameAndType } from '../../src/domain/file-types.ts';
import { refusalAtFileStart } from '../../src/uploads/options/file-refusal.ts';
import { JsonUploadParser } from '../../src/uploads/parsers/json-upload-parser.ts';
import { MultipartParser, multipartBoundary } from '../../src/uploads/parsers/multipart-parser.ts';
import { parseFileName, parseFolderPath } from '../../src/domain/file-names.ts';
import { MAX_TAGS, parseTags } from '../../src/domain/tags.ts';
import { parseMultipartOptions } from '../../src/uploads/options/upload-options.ts';
import { record, splitAt, summary, type Recording } from '../helpers/body-parser-events.ts';
import { boundaryArb, controlUnits, expectedFileName, expectedFolder, extFileName, fileNameArb, folderArb, invalidUtf8Arb } from '../helpers/hostile.ts';

// Issue 17.14: the bulk of the hostile-input volume, run directly against the parts that read
// client input: both upload body parsers (whole and cut at random points), the name, tag and
// folder validators, the upload query, the list query and paging headers, the Range header and
// the Content-Type. Fixed seed, bounded runs; every case has an oracle (the rules docs/api.md
// states, or the same body parsed whole). A refusal must be a 400 ServiceError with the spec's
// body; anything else (a TypeError, a 500, a hang) fails. test/integration/hostile-input.test.ts
// sends a smaller share over real sockets. The total is printed at the end.

const SEED = 0x17_14;
const counts: Record<string, number> = {};

/** HOSTILE_SCALE (a factor, 1 by default) scales every run count, for a quick look or a long soak. */
const SCALE = Number(process.env.HOSTILE_SCALE ?? '1');

function check(label: string, numRuns: number, property: fc.IProperty<any>): void {
  const runs = Math.max(1, Math.round(numRuns * SCALE));
  const started = process.cpuUsage();
  fc.assert(property, { seed: SEED, numRuns: runs, endOnFailure: true });
  const used = process.cpuUsage(started);
  counts[label] = runs;
  times[label] = (used.user + used.system) / 1e6;
}
const times: Record<string, number> = {};

/** The value `run` returns, or the 400 it throws; anything else thrown is a failure. */
function outcome<T>(run: () => T): { value: T } | { refused: ServiceError } {
  try {
    return { value: run() };
  } catch (error) {
    expectSpecRefusal(error, [400]);
    return { refused: error as ServiceError };
  }
}

function expectSpecRefusal(error: unknown, statuses: number[]): void {
  if (!(error instanceof ServiceError)) throw new Error(`not a ServiceError: ${String(error)}`);
  if (!statuses.includes(error.status)) throw new Error(`status ${error.status}: ${error.message}`);
  const body = error.toBody();
  const keys = Object.keys(body);
  const valid = typeof body.name === 'string' && typeof body.message === 'string' && body.message.length > 0 && typeof body.messageKey === 'string' &&
    keys.every((key) => ['name', 'message', 'status', 'messageKey', 'value'].includes(key)) && (body.value === undefined || typeof body.value === 'string' || typeof body.value === 'number');
  if (!valid) throw new Error(`not the spec error body: ${JSON.stringify(body)}`);
}

/** Checks a parser's recording: the event contract, a 400 if refused, and the same outcome when cut elsewhere. */
function expectSound(whole: Recording, split: Recording, label: string): void {
  if (whole.violations.length > 0) throw new Error(`${label}: contract ${whole.violations.join(', ')}`);
  if (whole.error !== null) expectSpecRefusal(whole.error, [400]);
  const a = summary(whole);
  const b = summary(split);
  if (a !== b) throw new Error(`${label}: cut differently, parsed differently:\n${a}\n${b}`);
}

const cutsArb = fc.array(fc.nat(100_000), { maxLength: 6 });
const cut = (bytes: Buffer, cuts: number[]) => splitAt(bytes, cuts.map((at) => at % (bytes.length + 1)));

/** One byte changed, inserted or dropped, or the body cut short, at a random place. */
function mutate(bytes: Buffer, at: number, byte: number, how: number): Buffer {
  const i = at % (bytes.length + 1);
  switch (how % 4) {
    case 0:
      return bytes.subarray(0, i);
    case 1:
      return Buffer.concat([bytes.subarray(0, i), Buffer.from([byte]), bytes.subarray(i)]);
    case 2:
      return Buffer.concat([bytes.subarray(0, i), bytes.subarray(i + 1)]);
    default: {
      const copy = Buffer.from(bytes);
      if (i < copy.length) copy[i] = byte;
      return copy;
    }
  }
}
const mutationArb = fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.nat(3));

// ---------------------------------------------------------------------------------------------
// Multipart bodies

interface GeneratedPart {
  headers: Buffer;
  /** Content pieces; a number stands for text close to the delimiter (made once the boundary is known). */
  data: Array<Buffer | number>;
  /** What the parser must report for it, when the body is not mutated. */
  expected: { file: true; name: string | null; type: string } | { file: false };
}

const dataArb = fc.array(
  fc.oneof(
    { weight: 4, arbitrary: fc.uint8Array({ maxLength: 400 }).map((bytes) => Buffer.from(bytes)) },
    { weight: 2, arbitrary: fc.constantFrom('\r\n', '\r\n--', '--', '\r\n\r\n', '\r').map((text) => Buffer.from(text)) },
    { weight: 2, arbitrary: fc.nat(3) },
  ),
  { maxLength: 4 },
);

/** Text close to `CRLF--boundary` but not it. */
function nearDelimiter(boundary: string, kind: number): Buffer {
  return Buffer.from([`\r\n--${boundary.slice(0, -1)}`, `\r\n--${boundary}`.slice(0, -1), `--${boundary}`, `\r\n-${boundary}`][kind]!);
}

const rawNameArb = fc.array(fc.oneof(fc.stringMatching(/^[A-Za-z0-9 ._()-]{1,5}$/).map((text) => Buffer.from(text)), invalidUtf8Arb), { minLength: 1, maxLength: 4 });
const fieldNameArb = fc.stringMatching(/^[a-z]{1,8}$/).filter((name) => name !== 'file');
const oddHeadersArb = fc.constantFrom<[string, GeneratedPart['expected']]>(
  ['X-Nothing: here', { file: false }],
  ['Content-Disposition: attachment; filename="x"', { file: false }],
  ['content-disposition:form-data;name=file', { file: true, name: null, type: 'text/plain' }],
  ['Content-Disposition: form-data; name="file"\r\n continued: fold', { file: true, name: null, type: 'text/plain' }],
  ['Content-Disposition: form-data; name="x"; filename="a.png"\r\nContent-Type:', { file: true, name: 'a.png', type: 'text/plain' }],
  ['Bad Header', { file: false }],
  [': no name', { file: false }],
  ['X: a\rb', { file: false }],
  ['X: a\nb', { file: false }],
  ['', { file: false }],
);

const partArb: fc.Arbitrary<GeneratedPart> = fc.oneof(
  // A file named in filename* (any well-formed text) or in a quoted filename (raw bytes, invalid UTF-8 included).
  fc.tuple(fileNameArb({ surrogates: false }), fc.constantFrom('image/png', 'application/octet-stream', null), dataArb).map(([name, type, data]) => ({
    headers: Buffer.from(`Content-Disposition: form-data; name="file"; filename*=${extFileName(name)}${type ? `\r\nContent-Type: ${type}` : ''}`),
    data,
    expected: { file: true as const, name, type: type ?? 'text/plain' },
  })),
  fc.tuple(rawNameArb, dataArb).map(([pieces, data]) => {
    const raw = Buffer.concat(pieces);
    return {
      headers: Buffer.concat([Buffer.from('Content-Disposition: form-data; name="avatar"; filename="'), raw, Buffer.from('"')]),
      data,
      expected: { file: true as const, name: new TextDecoder('utf-8', { ignoreBOM: true }).decode(raw), type: 'text/plain' },
    };
  }),
  fc.tuple(fieldNameArb, fc.string({ maxLength: 40 })).map(([name, value]) => ({
    headers: Buffer.from(`Content-Disposition: form-data; name="${name}"`),
    data: [Buffer.from(value)],
    expected: { file: false as const },
  })),
  // Header blocks a client should not send, or sends oddly.
  fc.tuple(oddHeadersArb, dataArb).map(([[headers, expected], data]) => ({ headers: Buffer.from(headers), data, expected })),
);

const multipartArb = fc.record({
  boundary: boundaryArb,
  parts: fc.array(partArb, { maxLength: 5 }),
  preamble: fc.constantFrom('', 'preamble\r\n', '\r\n'),
  epilogue: fc.constantFrom('', '\r\n', 'epilogue --x--'),
});

/** Each part's content for this boundary; null when a piece happens to make a real delimiter (the part would end early). */
function contents(boundary: string, parts: GeneratedPart[]): Buffer[] | null {
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  const out = parts.map((part) => Buffer.concat(part.data.map((piece) => (typeof piece === 'number' ? nearDelimiter(boundary, piece) : piece))));
  return out.some((data) => data.includes(delimiter)) ? null : out;
}

function multipartBytes(boundary: string, parts: GeneratedPart[], data: Buffer[], preamble: string, epilogue: string): Buffer {
  const pieces: Buffer[] = [Buffer.from(preamble)];
  for (const [index, part] of parts.entries()) {
    // A part without headers is the delimiter line and the empty line: `--boundary CRLF CRLF`.
    const head = part.headers.length > 0 ? [part.headers, Buffer.from('\r\n\r\n')] : [Buffer.from('\r\n')];
    pieces.push(Buffer.from(`${index > 0 || preamble ? '\r\n' : ''}--${boundary}\r\n`), ...head, data[index]!);
  }
  pieces.push(Buffer.from(`${parts.length > 0 || preamble ? '\r\n' : ''}--${boundary}--${epilogue}`));
  return Buffer.concat(pieces);
}

const parseMultipart = (boundary: string, chunks: Buffer[]) => record((events) => new MultipartParser(boundary, events), chunks);

t.test('multipart bodies: generated parts parse to exactly what was sent, whatever the cuts', async (t) => {
  check('multipart, well-formed', 12_000, fc.property(multipartArb, cutsArb, ({ boundary, parts, preamble, epilogue }, cuts) => {
    const data = contents(boundary, parts);
    fc.pre(data !== null);
    const bytes = multipartBytes(boundary, parts, data!, preamble, epilogue);
    const whole = parseMultipart(boundary, [bytes]);
    expectSound(whole, parseMultipart(boundary, cut(bytes, cuts)), 'multipart');
    // Parts with broken headers make the whole body a 400; otherwise every file comes out as sent.
    const broken = parts.some((part) => /^(Bad Header|: no name|X: a[\r\n]b)$/.test(part.headers.toString()));
    const files = parts.filter((part) => part.expected.file);
    if (broken) {
      if (whole.error === null) throw new Error('a broken header was accepted');
      return;
    }
    if (files.length === 0) {
      if (whole.error === null) throw new Error('a body without a file was accepted');
      return;
    }
    if (whole.error !== null) throw new Error(`refused: ${String(whole.error)}`);
    const reported = whole.files;
    if (reported.length !== files.length) throw new Error(`${reported.length} files reported, ${files.length} sent`);
    files.forEach((part, index) => {
      const expected = part.expected as { name: string | null; type: string };
      const got = reported[index]!;
      if (got.info.fileName !== expected.name) throw new Error(`name ${JSON.stringify(got.info.fileName)} instead of ${JSON.stringify(expected.name)}`);
      if (got.info.declaredType !== expected.type) throw new Error(`type ${got.info.declaredType} instead of ${expected.type}`);
      if (!got.data.equals(data![parts.indexOf(part)]!)) throw new Error('file bytes differ');
    });
  }));
});

t.test('multipart bodies: mutated and random bytes are a 400 or parsed, the same however cut', async (t) => {
  check('multipart, mutated', 14_000, fc.property(multipartArb, mutationArb, cutsArb, ({ boundary, parts, preamble, epilogue }, [at, byte, how], cuts) => {
    const data = contents(boundary, parts);
    fc.pre(data !== null);
    const bytes = mutate(multipartBytes(boundary, parts, data!, preamble, epilogue), at, byte, how);
    expectSound(parseMultipart(boundary, [bytes]), parseMultipart(boundary, cut(bytes, cuts)), 'mutated multipart');
  }));
  check('multipart, random bytes', 4_000, fc.property(boundaryArb, fc.uint8Array({ maxLength: 3000 }), cutsArb, (boundary, random, cuts) => {
    const bytes = Buffer.concat([Buffer.from(`--${boundary}\r\n`), Buffer.from(random)]);
    expectSound(parseMultipart(boundary, [bytes]), parseMultipart(boundary, cut(bytes, cuts)), 'random multipart');
  }));
});

t.test('multipart Content-Type: a boundary of 1-70 printable characters, or a 400', async (t) => {
  const contentTypeArb = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 120 }),
    fc.tuple(fc.constantFrom('multipart/form-data', 'Multipart/Form-Data', 'multipart/mixed', 'text/plain', ''), fc.string({ unit: fc.constantFrom('a', '=', ';', '"', ' ', '\\', 'boundary', 'Boundary', '\u00e9', '\t', "'", '*', '%'), maxLength: 30 }))
      .map(([type, rest]) => `${type}${rest}`),
  );
  check('multipart Content-Type', 6_000, fc.property(contentTypeArb, (contentType) => {
    const result = outcome(() => multipartBoundary(contentType));
    if ('value' in result && !/^[\x20-\x7e]{0,69}[\x21-\x7e]$/.test(result.value)) throw new Error(`boundary ${JSON.stringify(result.value)}`);
  }));
});

// ---------------------------------------------------------------------------------------------
// JSON bodies

/** Standard base64 in whole quanta, `=` only to pad the last one (CR, LF and space ignored). */
const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

const jsonMemberArb = fc.oneof(
  fc.tuple(fc.constantFrom('fileName', 'tags', 'public', 'folder', 'folderId', '__proto__', 'x', 'File'), fc.jsonValue({ maxDepth: 4 })).map(([key, value]) => `${JSON.stringify(key)}:${JSON.stringify(value)}`),
  fc.tuple(fileNameArb({ surrogates: true })).map(([name]) => `"fileName":${JSON.stringify(name)}`),
  fc.tuple(fc.uint8Array({ maxLength: 300 }), fc.constantFrom('data:image/png;base64,', '', 'data:;base64,', 'DATA:Text/HTML;charset=x;BASE64,'), fc.constantFrom('none', 'crlf', 'slash', 'space')).map(([bytes, prefix, style]) => {
    let text = Buffer.from(bytes).toString('base64');
    if (style === 'crlf') text = text.replace(/.{8}/g, '$&\r\n');
    if (style === 'space') text = text.replace(/.{5}/g, '$& ');
    let encoded = JSON.stringify(prefix + text);
    if (style === 'slash') encoded = encoded.replace(/\//g, '\\/');
    return `"file":${encoded}`;
  }),
);
const jsonBodyArb = fc.tuple(fc.array(jsonMemberArb, { maxLength: 6 }), fc.constantFrom('', ' ', '\r\n\t')).map(([members, space]) => Buffer.from(`${space}{${space}${members.join(`${space},${space}`)}${space}}${space}`));

const parseJson = (chunks: Buffer[]) => record((events) => new JsonUploadParser(events), chunks);

/** What JSON.parse and the base64 rules say of `bytes`: the file's bytes and the other members, or null when it must be refused. */
function jsonOracle(bytes: Buffer): { file: Buffer; fields: Record<string, unknown> } | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return null;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return null;
  const { file, ...fields } = parsed as Record<string, unknown>;
  if (typeof file !== 'string') return null;
  let base64 = file;
  const dataUri = /^data:([^,]*),/i.exec(file);
  if (dataUri) {
    if (!/;\s*base64\s*$/i.test(dataUri[1]!)) return null;
    base64 = file.slice(dataUri[0].length);
  }
  const compact = base64.replace(/[\r\n ]/g, '');
  if (!STRICT_BASE64.test(compact)) return null;
  return { file: Buffer.from(compact, 'base64'), fields };
}

t.test('JSON bodies: accepted exactly when JSON.parse and strict base64 accept, with the same bytes and members', async (t) => {
  check('JSON, well-formed', 12_000, fc.property(jsonBodyArb, cutsArb, (bytes, cuts) => {
    const whole = parseJson([bytes]);
    expectSound(whole, parseJson(cut(bytes, cuts)), 'JSON');
    const expected = jsonOracle(bytes);
    if (whole.error === null) {
      if (expected === null) throw new Error(`accepted what must be refused: ${bytes.toString()}`);
      if (!whole.files[0]!.data.equals(expected.file)) throw new Error('file bytes differ');
      if (JSON.stringify(whole.fields) !== JSON.stringify(expected.fields)) throw new Error(`members ${JSON.stringify(whole.fields)} instead of ${JSON.stringify(expected.fields)}`);
    } else if (expected !== null && !/more than one "file"|data URI|larger than|nests deeper|longer than/.test((whole.error as Error).message)) {
      // JSON.parse keeps the last of duplicate `file` members and has no size limits; otherwise the two agree.
      throw new Error(`refused what is fine: ${bytes.toString()}: ${(whole.error as Error).message}`);
    }
  }));
});

t.test('JSON bodies: mutated bodies and hostile bytes are a 400 or parsed, the same however cut', async (t) => {
  check('JSON, mutated', 14_000, fc.property(jsonBodyArb, mutationArb, cutsArb, (body, [at, byte, how], cuts) => {
    const bytes = mutate(body, at, byte, how);
    const whole = parseJson([bytes]);
    expectSound(whole, parseJson(cut(bytes, cuts)), 'mutated JSON');
    if (whole.error === null && jsonOracle(bytes) === null) throw new Error(`accepted what must be refused: ${JSON.stringify(bytes.toString('latin1'))}`);
  }));
  const hostileArb = fc.oneof(
    fc.uint8Array({ maxLength: 2000 }).map((random) => Buffer.from(random)),
    fc.tuple(invalidUtf8Arb, fc.constantFrom(...controlUnits), fc.nat(3)).map(([invalid, control, where]) =>
      Buffer.concat([Buffer.from('{"fileName":"a'), where === 0 ? invalid : Buffer.from(control), Buffer.from('.png","file":"QUJD'), where === 1 ? invalid : Buffer.from(where === 2 ? control : ''), Buffer.from('"}')]),
    ),
    fc.tuple(fc.integer({ min: 1, max: 3000 }), fc.constantFrom('[', '{"a":', '"', '\\', '{"file":"', '{"file":"data:')).map(([count, unit]) => Buffer.from(`{"x":${unit.repeat(count)}`)),
  );
  check('JSON, hostile bytes', 4_000, fc.property(hostileArb, cutsArb, (bytes, cuts) => {
    const whole = parseJson([bytes]);
    expectSound(whole, parseJson(cut(bytes, cuts)), 'hostile JSON');
    if (whole.error === null && jsonOracle(bytes) === null) throw new Error(`accepted what must be refused: ${JSON.stringify(bytes.toString('latin1'))}`);
  }));
});

// ---------------------------------------------------------------------------------------------
// Validators and readers

t.test('file names, folder paths and tags: stored exactly by the rules, or a 400', async (t) => {
  check('file names', 15_000, fc.property(fileNameArb({ surrogates: true }), (name) => {
    const result = outcome(() => parseFileName(name));
    const expected = expectedFileName(name);
    if ('value' in result ? result.value !== expected : expected !== null) throw new Error(`${JSON.stringify(name)}: ${JSON.stringify(result)} instead of ${JSON.stringify(expected)}`);
  }));
  check('folder paths', 10_000, fc.property(folderArb({ surrogates: true }), (folder) => {
    const result = outcome(() => parseFolderPath(folder));
    const expected = expectedFolder(folder);
    if ('value' in result ? JSON.stringify(result.value) !== JSON.stringify(expected) : expected !== null) throw new Error(`${JSON.stringify(folder)}: ${JSON.stringify(result)} instead of ${JSON.stringify(expected)}`);
  }));
  const tagUnit = fc.constantFrom('a', 'Z', '0', '_', '.', ':', '@', '-', ' ', ',', '\u0000', 'é', '😀', '/', '\ud800', '"');
  const tagsArb = fc.oneof(
    fc.string({ unit: tagUnit, maxLength: 80 }),
    fc.array(fc.oneof(fc.string({ unit: tagUnit, maxLength: 70 }), fc.constantFrom(1, null, true, [], {})), { maxLength: 25 }),
    fc.constantFrom(undefined, null, 1, {}, true),
  );
  check('tags', 10_000, fc.property(tagsArb, (value) => {
    const result = outcome(() => parseTags(value));
    // The rules: a comma-separated string or a list of strings; each trimmed, 1-64 of a-z (upper case is invalid, not lower-cased) 0-9 _ . : @ -; at most 20 distinct.
    let expected: string[] | null;
    if (value === undefined || value === null || value === '') expected = [];
    else if (typeof value !== 'string' && !Array.isArray(value)) expected = null;
    else {
      const list: unknown[] = typeof value === 'string' ? value.split(',') : value;
      const tags = list.map((tag) => (typeof tag === 'string' ? tag.trim() : null));
      expected = tags.every((tag) => tag !== null && /^[a-z0-9_.:@-]{1,64}$/.test(tag)) ? [...new Set(tags as string[])] : null;
      if (expected && expected.length > MAX_TAGS) expected = null;
    }
    if ('value' in result ? JSON.stringify(result.value) !== JSON.stringify(expected) : expected !== null) throw new Error(`${JSON.stringify(value)}: ${JSON.stringify(result)} instead of ${JSON.stringify(expected)}`);
  }));
});

const queryTextArb = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.constantFrom('', 'true', 'false', 'none', 'all', 'image', 'a.png', 'x.exe', 'a/b', '00000000-0000-4000-8000-000000000000', 'map:a,b', '%00', '\u0000', 'y'.repeat(300)),
);
const queryArb = fc.array(fc.tuple(fc.constantFrom('fileName', 'folder', 'folderId', 'public', 'tags', 'search', 'type', 'includeSubfolders', 'x', 'fileName'), queryTextArb), { maxLength: 6 }).map((pairs) => {
  const query = new URLSearchParams();
  for (const [name, value] of pairs) query.append(name, value.replace(/\p{Cs}/gu, '?'));
  return query;
});

t.test('query strings and headers: read by the rules, or a 400', async (t) => {
  check('upload query', 10_000, fc.property(queryArb, (query) => {
    const result = outcome(() => parseMultipartOptions(query));
    if (!('value' in result)) return;
    const options = result.value;
    const fileName = query.get('fileName');
    if (options.fileName !== (fileName === null ? null : expectedFileName(fileName))) throw new Error(`fileName ${JSON.stringify(options.fileName)}`);
    const folder = query.get('folder');
    if (JSON.stringify(options.folderPath) !== JSON.stringify(folder === null ? null : expectedFolder(folder))) throw new Error(`folder ${JSON.stringify(options.folderPath)}`);
    if (options.folderPath && options.folderId) throw new Error('both folder and folderId');
  }));
  check('list query', 6_000, fc.property(queryArb, (query) => {
    const result = outcome(() => parseListFilters(query));
    if (!('value' in result)) return;
    const filters = result.value;
    if (filters.search !== undefined && filters.search.length > MAX_SEARCH_LENGTH) throw new Error('search too long');
    if (filters.type !== undefined && !(MEDIA_TYPES as readonly string[]).includes(filters.type)) throw new Error(`type ${filters.type}`);
  }));
  const headerArb = fc.option(fc.oneof(fc.string({ unit: 'binary-ascii', maxLength: 12 }), fc.integer({ min: -10, max: 2_000_000 }).map(String), fc.constantFrom('1e3', '0x10', ' 5 ', '5.0', '5.5', 'Infinity', 'NaN', '')), { nil: undefined });
  check('paging headers', 6_000, fc.property(headerArb, headerArb, (pageNumber, pageSize) => {
    const result = outcome(() => parsePaging(pageNumber, pageSize));
    if (!('value' in result)) return;
    const { pageNumber: number, pageSize: size } = result.value;
    if (!Number.isInteger(number) || number < 1 || number > 1_000_000 || !Number.isInteger(size) || size < 1 || size > MAX_PAGE_SIZE) throw new Error(JSON.stringify(result.value));
  }));
  const rangeArb = fc.oneof(
    fc.string({ unit: 'binary-ascii', maxLength: 30 }),
    fc.tuple(fc.constantFrom('bytes=', 'Bytes = ', 'bytes=,', 'items='), fc.option(fc.nat(2_000_000), { nil: undefined }), fc.option(fc.nat(2_000_000), { nil: undefined }), fc.constantFrom('', ',0-1', ', ')).map(([unit, a, b, rest]) => `${unit}${a ?? ''}-${b ?? ''}${rest}`),
  );
  check('Range header', 6_000, fc.property(fc.option(rangeArb, { nil: undefined }), fc.nat(1_000_000), (header, size) => {
    const range = parseRange(header, size);
    if (range.kind === 'range' && !(range.start >= 0 && range.start <= range.end && range.end < size)) throw new Error(`${header} on ${size}: ${JSON.stringify(range)}`);
  }));
});

t.test('the refusal at file start: a 400 or 415 exactly when the name or declared type says so', async (t) => {
  const typeArb = fc.option(fc.constantFrom('image/png', 'text/html', 'TEXT/HTML', 'image/svg+xml', 'application/javascript', 'application/x-msdownload', 'text/plain', 'application/octet-stream', ''), { nil: null });
  const nameArb = fc.oneof(fileNameArb({ surrogates: true }), fc.constantFrom('a.exe', 'b.HTML', 'c.svgz ', 'd.js.', 'e.sh::$DATA', 'f.png', 'g.ts', 'page.html/..'));
  check('refusal at file start', 6_000, fc.property(fc.option(nameArb, { nil: null }), typeArb, fc.constantFrom('file', 'avatar', null), (name, type, field) => {
    let refusal: ServiceError | null = null;
    try {
      refusal = refusalAtFileStart(null, { fieldName: field, fileName: name, declaredType: type });
    } catch (error) {
      throw new Error(`threw ${String(error)}`);
    }
    const stored = name ? expectedFileName(name) : null;
    if (name && stored === null) {
      if (refusal?.status !== 400) throw new Error(`${JSON.stringify(name)}: expected 400, got ${refusal?.status}`);
      return;
    }
    const blocked = checkNameAndType(stored ?? '', type);
    if (blocked ? refusal?.status !== 415 : refusal !== null) throw new Error(`${JSON.stringify(name)} ${type}: ${refusal?.status}`);
    if (refusal) expectSpecRefusal(refusal, [415]);
  }));
});

t.test('the total', async (t) => {
  const total = Object.values(counts).reduce((sum, count) => sum + count, 0);
  t.comment(`hostile cases run directly: ${total} (${Object.entries(counts).map(([label, count]) => `${label} ${count} in ${times[label]!.toFixed(1)} s CPU`).join(', ')})`);
  if (SCALE >= 1) t.ok(total >= 100_000, `at least 100,000 hostile cases (${total})`);
});
