import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';

/** A multipart/form-data body of one file, as a stream, with its exact length when the file's size is known. */
export interface MultipartBody {
  contentType: string;
  /** Framing plus the file's size; undefined for a file of unknown size (sent chunked). */
  length: number | undefined;
  stream: Readable;
}

/** An ASCII stand-in for the part's filename; the client sends the exact name as the fileName option. */
function quoted(value: string): string {
  return value.replace(/[^\x20-\x7e]|["\\]/g, '_');
}

/**
 * Frames `file` (read lazily, never buffered whole) as the single part `file` of a form:
 * boundary and part headers, the content, the closing boundary.
 */
export function multipartFile(
  file: AsyncIterable<Uint8Array>, fileName: string, size: number | undefined, contentType = 'application/octet-stream',
  boundary = `----media-upload-${randomBytes(12).toString('hex')}`,
): MultipartBody {
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${quoted(fileName)}"\r\nContent-Type: ${contentType}\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  async function* frame(): AsyncGenerator<Uint8Array> {
    yield head;
    yield* file;
    yield tail;
  }
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    length: size === undefined ? undefined : head.length + size + tail.length,
    stream: Readable.from(frame(), { objectMode: false }),
  };
}
