import { constants as zlibConstants, createGunzip } from 'node:zlib';

/** Decompressed bytes per piece (zlib's default is 16 KiB): fewer, larger pieces cost less per byte. */
const OUTPUT_PIECE_BYTES = 128 * 1024;

/**
 * The decompressed pieces of gzip data (one or more members) arriving as `compressed` pieces. Lazy
 * both ways: the next compressed piece is taken only once every output of the last one is used, and
 * zlib makes output only as it is asked for, so a consumer that stops early (a bound, enough lines)
 * leaves the rest unread and undecompressed, however much a small input would inflate to.
 *
 * Data cut short (a log still being written when it was uploaded) ends without an error; damaged data
 * throws zlib's error (see isZlibError).
 */
export async function* gunzipPieces(compressed: AsyncIterable<Uint8Array>): AsyncGenerator<Buffer> {
  const gunzip = createGunzip({ finishFlush: zlibConstants.Z_SYNC_FLUSH, chunkSize: OUTPUT_PIECE_BYTES });
  let failure: Error | null = null;
  let wake: (() => void) | null = null;
  const signal = () => {
    wake?.();
    wake = null;
  };
  gunzip.on('error', (error) => {
    failure = error;
    signal();
  });
  gunzip.on('readable', signal);
  gunzip.on('end', signal);

  /** Every output until `done()` says the input so far is used up. */
  async function* outputsUntil(done: () => boolean): AsyncGenerator<Buffer> {
    for (;;) {
      const piece = gunzip.read() as Buffer | null;
      if (piece) {
        yield piece;
        continue;
      }
      if (failure) throw failure;
      if (done()) return;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
  }

  try {
    for await (const input of compressed) {
      let consumed = false;
      gunzip.write(input, () => {
        consumed = true;
        signal();
      });
      yield* outputsUntil(() => consumed);
    }
    gunzip.end();
    yield* outputsUntil(() => gunzip.readableEnded);
  } finally {
    gunzip.destroy();
  }
}

/** zlib's own errors (damaged data), as opposed to the storage's. */
export function isZlibError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('Z_');
}
