/**
 * Upload bodies for the load client, generated once and reused, so the client stays cheap.
 *
 * File content is random bytes that start like a PNG (test/helpers/uploads.ts pngLike), so the
 * service's type sniffing labels it and nothing blocks it; log uploads are plain text lines.
 * `image` content is a real PNG (a 1280x720 screenshot-like picture, as noisy as fits in the size,
 * padded to the exact size with a private ancillary chunk), for the rows where images are decoded.
 * Large content is not held whole: it is a 3 MiB "head" tile (one of a few variants, PNG header
 * first) followed by a shared 3 MiB random tile repeated, handed out as views of at most 1 MiB.
 * The tile size is a multiple of 3, so base64 of the content is the concatenation of the tiles'
 * base64, which is also encoded once.
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { crc32, deflateSync } from 'node:zlib';

export const KiB = 1024;
export const MiB = 1024 * KiB;
const TILE = 3 * MiB;
const WRITE_CHUNK = MiB;
const VARIANTS = 4;
/** Bodies up to this size are sent as one Buffer; larger ones as an async iterable of chunks. */
const WHOLE_BODY_MAX = 4 * MiB;
const PNG_HEADER = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
const PNG_SIGNATURE = PNG_HEADER.subarray(0, 8);
const BOUNDARY = '----mediaBenchBoundary7MA4YWxkTrZu0gW';

export type BodyKind = 'multipart' | 'json-base64' | 'json-datauri';
export type ContentKind = 'png' | 'log' | 'image';

export type SizeSpec =
  | { kind: 'fixed'; bytes: number }
  /** `largeShare` of the uploads are `largeBytes`, the rest uniformly between `minBytes` and `maxBytes`. */
  | { kind: 'mixed'; minBytes: number; maxBytes: number; largeBytes: number; largeShare: number };

export interface Workload {
  body: BodyKind;
  content: ContentKind;
  size: SizeSpec;
}

export type Body = Buffer | (() => AsyncIterable<Buffer>);

export interface UploadBody {
  /** File bytes in the body. */
  contentBytes: number;
  /** Exact Content-Length. */
  wireBytes: number;
  contentType: string;
  /** The path below /v1/cdn/media/{teamId}. */
  route: '/upload/file' | '/upload';
  body: Body;
}

/** `size` random bytes that start like a PNG (as test/helpers/uploads.ts pngLike). */
export function pngLikeContent(size: number): Buffer {
  const content = randomBytes(size);
  PNG_HEADER.copy(content, 0, 0, Math.min(size, PNG_HEADER.length));
  return content;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body) >>> 0);
  return Buffer.concat([length, body, crc]);
}

/**
 * A decodable PNG of exactly `bytes` bytes: a 1280x720 gradient with noise on a share of its pixels
 * (the largest share that still fits), then a private ancillary chunk (`prVt`, skipped by decoders)
 * of random padding.
 */
export function screenshotPng(bytes: number, seed: number): Buffer {
  const width = 1280;
  const height = 720;
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bits per channel
  header[9] = 2; // RGB
  const end = pngChunk('IEND', Buffer.alloc(0));
  for (const noise of [0.4, 0.25, 0.15, 0.1, 0.06, 0.04, 0.02, 0.01, 0.005, 0]) {
    const random = prng(seed);
    const raw = Buffer.alloc((width * 3 + 1) * height);
    for (let y = 0; y < height; y++) {
      const row = y * (width * 3 + 1);
      for (let x = 0; x < width; x++) {
        const at = row + 1 + x * 3;
        const jitter = random() < noise ? Math.floor(random() * 64) : 0;
        raw[at] = ((x * 255) / width + jitter) & 0xff;
        raw[at + 1] = ((y * 255) / height + jitter) & 0xff;
        raw[at + 2] = (((x + y) * 127) / (width + height) + seed * 16 + jitter) & 0xff;
      }
    }
    // PNG's Up filter (2) on every row: a gradient's rows then differ from the row above by little.
    const filtered = Buffer.alloc(raw.length);
    const stride = width * 3 + 1;
    for (let y = 0; y < height; y++) {
      filtered[y * stride] = 2;
      for (let i = 1; i < stride; i++) filtered[y * stride + i] = (raw[y * stride + i]! - (y > 0 ? raw[(y - 1) * stride + i]! : 0)) & 0xff;
    }
    const image = Buffer.concat([PNG_SIGNATURE, pngChunk('IHDR', header), pngChunk('IDAT', deflateSync(filtered))]);
    const padding = bytes - image.length - end.length - 12;
    if (padding >= 0) return Buffer.concat([image, pngChunk('prVt', randomBytes(padding)), end]);
  }
  throw new Error(`no 1280x720 PNG fits in ${bytes} bytes`);
}

/** A small deterministic PRNG (mulberry32), so runs choose the same sizes. */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The size of the next upload of a workload. */
export function chooseSize(size: SizeSpec, random: () => number): number {
  if (size.kind === 'fixed') return size.bytes;
  if (random() < size.largeShare) return size.largeBytes;
  return size.minBytes + Math.floor(random() * (size.maxBytes - size.minBytes + 1));
}

function logText(bytes: number, seed: number): Buffer {
  const random = prng(seed);
  const levels = ['INFO', 'INFO', 'INFO', 'WARN', 'DEBUG', 'ERROR'];
  const lines: string[] = [];
  let length = 0;
  let second = 0;
  while (length < bytes) {
    const level = levels[Math.floor(random() * levels.length)]!;
    second += Math.floor(random() * 3);
    const line = `[${level}] 2025-01-01T12:${String(Math.floor(second / 60) % 60).padStart(2, '0')}:${String(second % 60).padStart(2, '0')}Z ` +
      `server eu-${1 + Math.floor(random() * 9)} player ${Math.floor(random() * 1e6)} tick=${Math.floor(random() * 1e5)} ` +
      `latency=${(random() * 120).toFixed(1)}ms\n`;
    lines.push(line);
    length += line.length;
  }
  return Buffer.from(lines.join('')).subarray(0, bytes);
}

/** Content and bodies of one client process. */
export class PayloadFactory {
  private readonly heads: Buffer[];
  private readonly tile: Buffer;
  private readonly heads64: Buffer[];
  private readonly tile64: Buffer;
  private readonly logs = new Map<number, Buffer[]>();
  private readonly images = new Map<number, Buffer[]>();
  private readonly wholeBodies = new Map<string, Buffer>();
  private readonly tail64 = new Map<number, Buffer>();

  constructor() {
    this.tile = randomBytes(TILE);
    this.heads = Array.from({ length: VARIANTS }, () => {
      const head = randomBytes(TILE);
      PNG_HEADER.copy(head, 0);
      return head;
    });
    this.tile64 = Buffer.from(this.tile.toString('base64'));
    this.heads64 = this.heads.map((head) => Buffer.from(head.toString('base64')));
  }

  /** The file content as views of at most WRITE_CHUNK bytes (no copies). */
  *contentChunks(kind: ContentKind, bytes: number, variant: number): Generator<Buffer> {
    if (kind !== 'png') {
      yield this.content(kind, bytes, variant);
      return;
    }
    let left = bytes;
    let source = this.heads[variant % VARIANTS]!;
    while (left > 0) {
      const piece = Math.min(left, TILE);
      for (let offset = 0; offset < piece; offset += WRITE_CHUNK) yield source.subarray(offset, Math.min(piece, offset + WRITE_CHUNK));
      left -= piece;
      source = this.tile;
    }
  }

  /** The content as one Buffer (a view when it fits in one tile). */
  content(kind: ContentKind, bytes: number, variant: number): Buffer {
    if (kind === 'log') return this.logContent(bytes, variant);
    if (kind === 'image') return this.imageContent(bytes, variant);
    if (bytes <= TILE) return this.heads[variant % VARIANTS]!.subarray(0, bytes);
    return Buffer.concat([...this.contentChunks(kind, bytes, variant)]);
  }

  /** The content for lib-storage: a Buffer when small, else a stream of views. */
  contentBody(kind: ContentKind, bytes: number, variant: number): Buffer | Readable {
    if (bytes <= WHOLE_BODY_MAX) return this.content(kind, bytes, variant);
    return Readable.from(this.contentChunks(kind, bytes, variant), { objectMode: false });
  }

  private imageContent(bytes: number, variant: number): Buffer {
    let list = this.images.get(bytes);
    if (!list) {
      list = Array.from({ length: VARIANTS }, (_, index) => screenshotPng(bytes, index + 1));
      this.images.set(bytes, list);
    }
    return list[variant % list.length]!;
  }

  private logContent(bytes: number, variant: number): Buffer {
    let list = this.logs.get(bytes);
    if (!list) {
      list = Array.from({ length: 16 }, (_, index) => logText(bytes, 1000 + index));
      this.logs.set(bytes, list);
    }
    return list[variant % list.length]!;
  }

  /** base64 of the content, as chunks; every piece but the last is a multiple of 3 content bytes. */
  private *base64Chunks(kind: ContentKind, bytes: number, variant: number): Generator<Buffer> {
    if (kind !== 'png') {
      yield Buffer.from(this.content(kind, bytes, variant).toString('base64'));
      return;
    }
    let left = bytes;
    let first = true;
    while (left > 0) {
      let encoded: Buffer;
      if (left >= TILE) {
        encoded = first ? this.heads64[variant % VARIANTS]! : this.tile64;
        left -= TILE;
      } else {
        encoded = first ? Buffer.from(this.heads[variant % VARIANTS]!.subarray(0, left).toString('base64')) : this.tailBase64(left);
        left = 0;
      }
      first = false;
      for (let offset = 0; offset < encoded.length; offset += WRITE_CHUNK) yield encoded.subarray(offset, offset + WRITE_CHUNK);
    }
  }

  private tailBase64(bytes: number): Buffer {
    let encoded = this.tail64.get(bytes);
    if (!encoded) {
      encoded = Buffer.from(this.tile.subarray(0, bytes).toString('base64'));
      if (this.tail64.size > 64) this.tail64.clear();
      this.tail64.set(bytes, encoded);
    }
    return encoded;
  }

  /** A body for the workload; `random` picks sizes, `variant` the content. */
  next(workload: Workload, random: () => number, variant: number): UploadBody {
    const bytes = chooseSize(workload.size, random);
    const fileName = workload.content === 'log' ? 'server.log' : 'shot.png';
    let parts: () => Generator<Buffer>;
    let wireBytes: number;
    let contentType: string;
    let route: UploadBody['route'];
    if (workload.body === 'multipart') {
      const head = Buffer.from(
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${fileName}"\r\n` +
          `Content-Type: ${workload.content === 'log' ? 'text/plain' : 'image/png'}\r\n\r\n`,
      );
      const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
      const factory = this;
      parts = function* () {
        yield head;
        yield* factory.contentChunks(workload.content, bytes, variant);
        yield tail;
      };
      wireBytes = head.length + bytes + tail.length;
      contentType = `multipart/form-data; boundary=${BOUNDARY}`;
      route = '/upload/file';
    } else {
      const prefix = workload.body === 'json-datauri' ? `data:${workload.content === 'log' ? 'text/plain' : 'image/png'};base64,` : '';
      const head = Buffer.from(`{"fileName":"${fileName}","file":"${prefix}`);
      const tail = Buffer.from('"}');
      const factory = this;
      parts = function* () {
        yield head;
        yield* factory.base64Chunks(workload.content, bytes, variant);
        yield tail;
      };
      wireBytes = head.length + 4 * Math.ceil(bytes / 3) + tail.length;
      contentType = 'application/json';
      route = '/upload';
    }
    let body: Body;
    if (wireBytes <= WHOLE_BODY_MAX) {
      const key = `${workload.body}:${workload.content}:${bytes}:${variant % 16}`;
      let whole = workload.size.kind === 'fixed' ? this.wholeBodies.get(key) : undefined;
      if (!whole) {
        whole = Buffer.concat([...parts()]);
        if (workload.size.kind === 'fixed') this.wholeBodies.set(key, whole);
      }
      body = whole;
    } else {
      body = async function* () {
        yield* parts();
      };
    }
    return { contentBytes: bytes, wireBytes, contentType, route, body };
  }
}
