import type { ObjectWriter } from '../../storage/object-store.ts';

/**
 * A writer that keeps nothing: the body of a retried idempotent upload is read only to compare
 * what it carries with the first request, and none of it is stored.
 */
export class DiscardWriter implements ObjectWriter {
  bytesWritten = 0;

  write(chunk: Buffer): boolean {
    this.bytesWritten += chunk.length;
    return true;
  }

  onDrain(): void {}

  onError(): void {}

  async finish(): Promise<{ size: number; etag: string | null }> {
    return { size: this.bytesWritten, etag: null };
  }

  async abort(): Promise<void> {}
}
