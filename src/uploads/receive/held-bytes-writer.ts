import type { ObjectWriter } from '../../storage/object-store.ts';

/**
 * A small file's bytes held in memory until its commit writes them into the database with its row
 * (DATABASE_FILE_MAX_BYTES): nothing reaches the object store, so nothing is left behind when the
 * upload fails. The body's declared length bounds what it holds.
 */
export class HeldBytesWriter implements ObjectWriter {
  bytesWritten = 0;
  private readonly chunks: Buffer[] = [];

  write(chunk: Buffer, transient?: boolean): boolean {
    this.chunks.push(transient ? Buffer.from(chunk) : chunk);
    this.bytesWritten += chunk.length;
    return true;
  }

  onDrain(): void {}

  onError(): void {}

  async finish(): Promise<{ size: number; etag: string | null }> {
    return { size: this.bytesWritten, etag: null };
  }

  async abort(): Promise<void> {
    this.chunks.length = 0;
  }

  /** The file's bytes, once the body is complete. */
  content(): Buffer {
    return this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.bytesWritten);
  }
}
