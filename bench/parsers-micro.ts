/**
 * CPU cost of the upload body parsers alone: one body parsed start to end with callbacks that do
 * nothing, per upload and per byte. Compares the parsers in this tree with those of another git
 * revision (by default the last one built on @fastify/busboy and stream-json), when that
 * revision's dependencies are still installed.
 *
 *   node bench/parsers-micro.ts [--rev <git revision>] [--rounds N] [--json]
 *
 * Bodies: a 256 KiB file as multipart/form-data (one file part and two small fields), an 8 KiB
 * JSON body (a data URI of ~6 KiB plus fileName and tags), and an 8 MiB file of each kind for the
 * per-byte rate. Each is fed in 64 KiB chunks (a typical socket read; uWebSockets.js hands over at
 * most 512 KiB). Reported per body: the median over rounds of the mean CPU time (user + system,
 * process.cpuUsage) per parse within a round, in µs per upload and ns per body byte. CPU time,
 * not wall time, because the machine may be shared; medians, not minimums.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BodyParser, BodyParserEvents } from '../src/uploads/parsers/body-parser.ts';
import { JsonUploadParser } from '../src/uploads/parsers/json-upload-parser.ts';
import { MultipartParser, multipartBoundary } from '../src/uploads/parsers/multipart-parser.ts';

const args = process.argv.slice(2);
const option = (name: string, fallback: string): string => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1]! : fallback;
};
const revision = option('--rev', '03fe438');
const rounds = Number(option('--rounds', '15'));
const asJson = args.includes('--json');

const KiB = 1024;
const MiB = 1024 * KiB;
const CHUNK = 64 * KiB;
const BOUNDARY = '----BenchBoundary7MA4YWxkTrZu0gW';
const CONTENT_TYPE = `multipart/form-data; boundary=${BOUNDARY}`;

type Factory = (events: BodyParserEvents) => BodyParser;
interface Implementation {
  multipart: Factory;
  json: Factory;
}

function randomish(size: number): Buffer {
  const out = Buffer.alloc(size);
  let x = 0x12345678;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

function multipartBody(size: number): Buffer {
  return Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="tags"\r\n\r\nmap:a,b\r\n`),
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="shot.png"\r\nContent-Type: image/png\r\n\r\n`),
    randomish(size),
    Buffer.from(`\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="note"\r\n\r\nhello\r\n--${BOUNDARY}--\r\n`),
  ]);
}

function jsonBody(bodySize: number): Buffer {
  const frame = (b64: string) => `{"fileName":"shot.png","tags":["map:a","b"],"public":true,"file":"data:image/png;base64,${b64}"}`;
  const overhead = frame('').length;
  const bytes = Math.floor(((bodySize - overhead) * 3) / 4 / 3) * 3;
  return Buffer.from(frame(randomish(bytes).toString('base64')));
}

function chunks(body: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < body.length; at += CHUNK) out.push(Buffer.from(body.subarray(at, at + CHUNK)));
  return out;
}

/** Parses `pieces` once; throws unless the parser finished with exactly `expectedBytes` of file. */
function parseOnce(create: Factory, pieces: Buffer[], expectedBytes: number): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    let bytes = 0;
    const parser = create({
      fileStart: () => true,
      fileData: (chunk) => {
        bytes += chunk.length;
      },
      fileEnd: () => undefined,
      finish: () => (bytes === expectedBytes ? resolvePromise() : reject(new Error(`parsed ${bytes} of ${expectedBytes} bytes`))),
      error: (error) => reject(error),
    });
    for (const piece of pieces) parser.write(piece);
    parser.end();
  });
}

function cpuMs(usage: NodeJS.CpuUsage): number {
  return (usage.user + usage.system) / 1000;
}

async function measure(create: Factory, body: Buffer, fileBytes: number): Promise<{ usPerUpload: number; nsPerByte: number }> {
  const pieces = chunks(body);
  // Enough parses per round for ~20 ms of work, after a warm-up of ~200 ms of CPU.
  const warm = process.cpuUsage();
  let warmups = 0;
  while (cpuMs(process.cpuUsage(warm)) < 200) {
    await parseOnce(create, pieces, fileBytes);
    warmups++;
  }
  const perRound = Math.max(3, Math.ceil(warmups / 10));
  const samples: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const start = process.cpuUsage();
    for (let i = 0; i < perRound; i++) await parseOnce(create, pieces, fileBytes);
    const used = process.cpuUsage(start);
    samples.push((used.user + used.system) / 1000 / perRound);
  }
  samples.sort((a, b) => a - b);
  const ms = samples[Math.floor(samples.length / 2)]!;
  return { usPerUpload: ms * 1000, nsPerByte: (ms * 1e6) / body.length };
}

const current: Implementation = {
  multipart: (events) => new MultipartParser(multipartBoundary(CONTENT_TYPE), events),
  json: (events) => new JsonUploadParser(events),
};

/** The revision's parsers (their old adapter layer), extracted from git; null when unavailable. */
async function previous(): Promise<{ implementation: Implementation; cleanup: () => void } | null> {
  const root = resolve(import.meta.dirname, '..');
  const directory = mkdtempSync(join(tmpdir(), 'parsers-bench-'));
  const cleanup = () => rmSync(directory, { recursive: true, force: true });
  try {
    const archive = execFileSync('git', ['-C', root, 'archive', revision, 'src/upload/parsers', 'src/errors']);
    execFileSync('tar', ['-x', '-C', directory], { input: archive });
    if (!existsSync(join(directory, 'src/upload/parsers/upload-body-parsers.ts'))) throw new Error(`${revision} has no upload-body-parsers.ts`);
    symlinkSync(join(root, 'node_modules'), join(directory, 'node_modules'));
    const module = await import(pathToFileURL(join(directory, 'src/upload/parsers/upload-body-parsers.ts')).href);
    return {
      implementation: {
        multipart: (events) => module.createMultipartBodyParser(CONTENT_TYPE, events),
        json: (events) => module.createJsonBodyParser(events),
      },
      cleanup,
    };
  } catch (error) {
    cleanup();
    console.error(`(no comparison with ${revision}: ${(error as Error).message.split('\n')[0]})`);
    return null;
  }
}

const bodies = [
  { label: 'multipart 256 KiB', kind: 'multipart' as const, body: multipartBody(256 * KiB), fileBytes: 256 * KiB },
  { label: 'JSON 8 KiB', kind: 'json' as const, body: jsonBody(8 * KiB), fileBytes: 0 },
  { label: 'multipart 8 MiB', kind: 'multipart' as const, body: multipartBody(8 * MiB), fileBytes: 8 * MiB },
  { label: 'JSON 8 MiB', kind: 'json' as const, body: jsonBody(8 * MiB), fileBytes: 0 },
];
for (const entry of bodies) {
  if (entry.kind === 'json') {
    const text = entry.body.toString();
    entry.fileBytes = Buffer.from(text.slice(text.indexOf('base64,') + 7, text.lastIndexOf('"')), 'base64').length;
  }
}

const old = await previous();
const rows: Array<Record<string, string | number>> = [];
for (const { label, kind, body, fileBytes } of bodies) {
  const now = await measure(current[kind], body, fileBytes);
  const before = old ? await measure(old.implementation[kind], body, fileBytes) : null;
  rows.push({
    body: label,
    bytes: body.length,
    'new µs/upload': Number(now.usPerUpload.toFixed(1)),
    'new ns/byte': Number(now.nsPerByte.toFixed(3)),
    ...(before
      ? {
          [`${revision} µs/upload`]: Number(before.usPerUpload.toFixed(1)),
          [`${revision} ns/byte`]: Number(before.nsPerByte.toFixed(3)),
          speed: `${(before.usPerUpload / now.usPerUpload).toFixed(1)}x`,
        }
      : {}),
  });
}
old?.cleanup();
if (asJson) console.log(JSON.stringify(rows, null, 2));
else console.table(rows);
