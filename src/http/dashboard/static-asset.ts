import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { brotliCompress, constants as zlib, gzip as gzipCallback } from 'node:zlib';

const brotli = promisify(brotliCompress);
const gzip = promisify(gzipCallback);

/**
 * One file of the dashboard as served: its bytes, compressed once (brotli and gzip, kept only when
 * smaller; on libuv's threads, not the event loop) and a strong ETag per encoding. The dashboard is
 * a few dozen small files, so holding them in memory costs less than compressing on every request.
 */
export interface StaticAsset {
  contentType: string;
  plain: Buffer;
  gzip: Buffer | null;
  brotli: Buffer | null;
  /** The content hash (quoted by the encoding's ETag). */
  hash: string;
}

export type Encoding = 'br' | 'gzip' | 'identity';

/** Brotli's best quality costs ~1 s on an 85 KB file for 7% less than quality 9: kept for the small files of the first load. */
const BEST_QUALITY_BELOW_BYTES = 64 * 1024;

export async function staticAsset(contentType: string, content: Buffer | string): Promise<StaticAsset> {
  const plain = typeof content === 'string' ? Buffer.from(content) : content;
  const quality = plain.length < BEST_QUALITY_BELOW_BYTES ? 11 : 9;
  const [gzipped, brotlied] = await Promise.all([
    gzip(plain, { level: 9 }),
    brotli(plain, { params: { [zlib.BROTLI_PARAM_QUALITY]: quality, [zlib.BROTLI_PARAM_SIZE_HINT]: plain.length } }),
  ]);
  return {
    contentType,
    plain,
    gzip: gzipped.length < plain.length ? gzipped : null,
    brotli: brotlied.length < plain.length ? brotlied : null,
    hash: createHash('sha256').update(plain).digest('base64url').slice(0, 22),
  };
}

/** The encoding to send: brotli, then gzip, when the client accepts it and it is smaller (q=0 refuses). */
export function chooseEncoding(asset: StaticAsset, acceptEncoding: string | undefined): Encoding {
  const accepted = acceptedEncodings(acceptEncoding ?? '');
  if (asset.brotli && accepted.has('br')) return 'br';
  if (asset.gzip && accepted.has('gzip')) return 'gzip';
  return 'identity';
}

function acceptedEncodings(header: string): Set<string> {
  const accepted = new Set<string>();
  for (const part of header.split(',')) {
    const [name, ...parameters] = part.trim().toLowerCase().split(';');
    const refused = parameters.some((parameter) => /^\s*q\s*=\s*0(\.0*)?\s*$/.test(parameter));
    if (name && !refused) accepted.add(name.trim());
  }
  return accepted;
}

export function encodedBody(asset: StaticAsset, encoding: Encoding): Buffer {
  if (encoding === 'br') return asset.brotli!;
  if (encoding === 'gzip') return asset.gzip!;
  return asset.plain;
}

/** A strong ETag per representation: the same bytes in another encoding are another representation. */
export function etagOf(asset: StaticAsset, encoding: Encoding): string {
  return `"${asset.hash}${encoding === 'identity' ? '' : `-${encoding}`}"`;
}
