import { createHash } from 'node:crypto';
import { ServiceError } from '../../src/errors/service-error.ts';
import type { BodyParser, BodyParserEvents, FileStart } from '../../src/uploads/parsers/body-parser.ts';

// Records what an upload body parser reports, in a form two runs can be compared by: the files
// with their bytes joined (however the parser cut them), the fields, and the outcome.

export interface RecordedFile {
  info: FileStart;
  accepted: boolean;
  data: Buffer;
  /** fileData calls (a file's bytes may come in any number of pieces). */
  pieces: number;
  ended: boolean;
}

export interface Recording {
  files: RecordedFile[];
  /** Event names in order; consecutive fileData calls appear once as 'data'. */
  log: string[];
  fields: Record<string, unknown> | null;
  error: unknown;
  /** Callbacks after finish()/error(), or fileData/fileEnd outside an accepted file: must stay 0. */
  violations: string[];
}

export interface RecordOptions {
  accept?: (info: FileStart, index: number) => boolean;
  onData?: (chunk: Buffer, recording: Recording) => void;
  afterWrite?: (recording: Recording, written: number) => void;
}

/** Feeds `chunks` to the parser made by `create`, ends it, and returns what it reported. */
export function record(create: (events: BodyParserEvents) => BodyParser, chunks: Buffer[], options: RecordOptions = {}): Recording {
  const recording: Recording = { files: [], log: [], fields: null, error: null, violations: [] };
  let settled = false;
  let current: RecordedFile | null = null;
  const pieces = new Map<RecordedFile, Buffer[]>();
  /** Joins each file's pieces (kept as given, so views that a later write overwrote would show). */
  const join = () => {
    for (const [file, list] of pieces) file.data = Buffer.concat(list);
  };
  const check = (event: string) => {
    if (settled) recording.violations.push(`${event} after the outcome`);
  };
  const events: BodyParserEvents = {
    fileStart(info) {
      check('fileStart');
      if (current) recording.violations.push('fileStart before the previous fileEnd');
      const accepted = options.accept ? options.accept(info, recording.files.length) : true;
      const file: RecordedFile = { info, accepted, data: Buffer.alloc(0), pieces: 0, ended: false };
      recording.files.push(file);
      pieces.set(file, []);
      recording.log.push(`start:${info.fieldName}`);
      current = accepted ? file : null;
      return accepted;
    },
    fileData(chunk) {
      check('fileData');
      if (!current) {
        recording.violations.push('fileData outside an accepted file');
        return;
      }
      if (chunk.length === 0) recording.violations.push('empty fileData');
      pieces.get(current)!.push(chunk);
      current.pieces += 1;
      if (recording.log[recording.log.length - 1] !== 'data') recording.log.push('data');
      if (options.onData || options.afterWrite) join();
      options.onData?.(chunk, recording);
    },
    fileEnd() {
      check('fileEnd');
      if (!current) recording.violations.push('fileEnd outside an accepted file');
      else current.ended = true;
      current = null;
      recording.log.push('end');
    },
    finish(fields) {
      check('finish');
      settled = true;
      if (current) recording.violations.push('finish inside a file');
      recording.fields = fields;
      recording.log.push('finish');
    },
    error(error) {
      check('error');
      settled = true;
      recording.error = error;
      recording.log.push('error');
    },
  };
  const parser = create(events);
  let written = 0;
  for (const chunk of chunks) {
    parser.write(chunk);
    written += chunk.length;
    if (options.afterWrite) {
      join();
      options.afterWrite(recording, written);
    }
  }
  parser.end();
  join();
  if (!settled) recording.violations.push('end() returned before finish() or error()');
  return recording;
}

/**
 * A recording as one comparable string: events, file infos and bytes (hashed), fields; or, for a
 * refused body, the error alone (how much was delivered before it depends on where chunks end).
 */
export function summary(recording: Recording): string {
  const error = recording.error;
  if (error !== null) {
    return JSON.stringify({ error: error instanceof ServiceError ? `${error.status} ${error.message}` : `not a ServiceError: ${String(error)}`, violations: recording.violations });
  }
  return JSON.stringify({
    log: recording.log,
    files: recording.files.map((file) => ({ info: file.info, accepted: file.accepted, ended: file.ended, bytes: file.data.length, sha: createHash('sha1').update(file.data).digest('hex') })),
    fields: recording.fields,
    violations: recording.violations,
  });
}

/** `buffer` cut at the given offsets (sorted, deduplicated, inside it), as owned copies. */
export function splitAt(buffer: Buffer, offsets: number[]): Buffer[] {
  const cuts = [...new Set(offsets.filter((at) => at > 0 && at < buffer.length))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let from = 0;
  for (const at of [...cuts, buffer.length]) {
    chunks.push(Buffer.from(buffer.subarray(from, at)));
    from = at;
  }
  return buffer.length === 0 ? [] : chunks;
}

export function chunkBy(buffer: Buffer, sizes: number[] | ((index: number) => number)): Buffer[] {
  const chunks: Buffer[] = [];
  for (let at = 0, i = 0; at < buffer.length; i++) {
    const size = Array.isArray(sizes) ? sizes[i % sizes.length]! : sizes(i);
    chunks.push(Buffer.from(buffer.subarray(at, at + size)));
    at += size;
  }
  return chunks;
}

/** A small seeded PRNG, so a failing chunking can be reproduced. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

export function randomChunks(buffer: Buffer, seed: number, max: number): Buffer[] {
  const random = prng(seed);
  return chunkBy(buffer, () => 1 + Math.floor(random() * max));
}

export function isBadRequest(error: unknown): error is ServiceError {
  return error instanceof ServiceError && error.status === 400;
}
