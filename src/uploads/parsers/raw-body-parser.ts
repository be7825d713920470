import type { BodyParser, BodyParserEvents, FileStart } from './body-parser.ts';

/**
 * A body that is the file itself (an upload URL used with the file's own Content-Type): the file
 * starts with the first byte (or at the end of an empty body), every chunk is file data, and the
 * body's end is the file's end. Its name and declared type come from the request (`file`).
 */
export class RawBodyParser implements BodyParser {
  private readonly file: FileStart;
  private readonly events: BodyParserEvents;
  private state: 'waiting' | 'file' | 'skipping' | 'done' = 'waiting';

  constructor(file: FileStart, events: BodyParserEvents) {
    this.file = file;
    this.events = events;
  }

  write(chunk: Buffer): void {
    if (!this.start()) return;
    if (this.state !== 'file' || chunk.length === 0) return;
    this.call(() => this.events.fileData(chunk));
  }

  end(): void {
    if (!this.start()) return;
    const hadFile = this.state === 'file';
    this.call(() => {
      if (hadFile) this.events.fileEnd();
      this.state = 'done';
      this.events.finish({});
    });
    this.state = 'done';
  }

  destroy(): void {
    this.state = 'done';
  }

  /** Announces the file once; false when parsing has ended. */
  private start(): boolean {
    if (this.state === 'waiting') this.call(() => (this.state = this.events.fileStart(this.file) ? 'file' : 'skipping'));
    return !this.ended();
  }

  private ended(): boolean {
    return this.state === 'done';
  }

  private call(callback: () => unknown): void {
    try {
      callback();
    } catch (error) {
      this.state = 'done';
      this.events.error(error);
    }
  }
}
