import { connect, type Socket } from 'node:net';

// One raw TCP connection that reads HTTP responses one after another, for keep-alive and pipelining
// tests: node:http and fetch hide whether a connection survived an answer, and cannot pipeline.

export interface ParsedResponse {
  status: number;
  /** Header lines as received, `Name: value`, in order. */
  headerLines: string[];
  /** Header values by lower-case name (the last one wins). */
  headers: Record<string, string>;
  body: Buffer;
  json: any;
}

export class RawConnection {
  readonly socket: Socket;
  private buffer = Buffer.alloc(0);
  private closedFlag = false;
  private waiter: (() => void) | null = null;
  /** Resolves when the server (or anything) closed the connection. */
  readonly closed: Promise<void>;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.waiter?.();
    });
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => socket.on('close', () => {
      this.closedFlag = true;
      this.waiter?.();
      resolve();
    }));
  }

  static async open(port: number): Promise<RawConnection> {
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return new RawConnection(socket);
  }

  get isClosed(): boolean {
    return this.closedFlag;
  }

  write(data: string | Buffer): void {
    this.socket.write(typeof data === 'string' ? Buffer.from(data, 'latin1') : data);
  }

  /** The next response; `bodyless` for the answer to HEAD (204, 304 and 1xx never have a body). Rejects if the connection closes first or after `timeoutMs`. */
  async next(options: { bodyless?: boolean; timeoutMs?: number } = {}): Promise<ParsedResponse> {
    const deadline = Date.now() + (options.timeoutMs ?? 10_000);
    for (;;) {
      const parsed = this.parse(options.bodyless ?? false);
      if (parsed) return parsed;
      if (this.closedFlag) throw new Error(`connection closed without a (complete) response; ${this.buffer.length} bytes left: ${JSON.stringify(this.buffer.subarray(0, 200).toString('latin1'))}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('no response in time');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(timer);
          this.waiter = null;
          resolve();
        };
      });
    }
  }

  /** Bytes received that no response consumed yet. */
  get pending(): Buffer {
    return this.buffer;
  }

  destroy(): void {
    this.socket.destroy();
  }

  private parse(bodyless: boolean): ParsedResponse | null {
    const end = this.buffer.indexOf('\r\n\r\n');
    if (end === -1) return null;
    const lines = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
    const match = /^HTTP\/1\.1 (\d{3})/.exec(lines[0]!);
    if (!match) throw new Error(`not an HTTP response: ${JSON.stringify(lines[0])}`);
    const status = Number(match[1]);
    const headerLines = lines.slice(1);
    const headers: Record<string, string> = {};
    for (const line of headerLines) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    const start = end + 4;
    let length: number;
    if (bodyless || status === 204 || status === 304 || status < 200) length = 0;
    else if (headers['transfer-encoding']?.toLowerCase() === 'chunked') return this.parseChunked(status, headerLines, headers, start);
    else if (headers['content-length'] !== undefined) length = Number(headers['content-length']);
    else if (this.closedFlag) length = this.buffer.length - start;
    else return null;
    if (this.buffer.length - start < length) return null;
    const body = this.buffer.subarray(start, start + length);
    this.buffer = this.buffer.subarray(start + length);
    return { status, headerLines, headers, body, json: jsonOf(body) };
  }

  /** A chunked body, once its last chunk has arrived. */
  private parseChunked(status: number, headerLines: string[], headers: Record<string, string>, start: number): ParsedResponse | null {
    const chunked = chunkedBody(this.buffer, start);
    if (!chunked) return null;
    this.buffer = this.buffer.subarray(chunked.end);
    return { status, headerLines, headers, body: chunked.body, json: jsonOf(chunked.body) };
  }
}

/**
 * The body of a chunked message (without extensions or trailers) whose chunks start at `start` of
 * `buffer`, and where the message ends; null until its last chunk has arrived.
 */
export function chunkedBody(buffer: Buffer, start: number): { body: Buffer; end: number } | null {
  const chunks: Buffer[] = [];
  let at = start;
  for (;;) {
    const lineEnd = buffer.indexOf('\r\n', at);
    if (lineEnd === -1) return null;
    const line = buffer.subarray(at, lineEnd).toString('latin1');
    if (!/^[0-9a-fA-F]+$/.test(line)) throw new Error(`not a chunk size: ${JSON.stringify(line)}`);
    const size = Number.parseInt(line, 16);
    const dataEnd = lineEnd + 2 + size;
    if (buffer.length < dataEnd + 2) return null;
    chunks.push(buffer.subarray(lineEnd + 2, dataEnd));
    at = dataEnd + 2;
    if (size === 0) return { body: Buffer.concat(chunks), end: at };
  }
}

function jsonOf(body: Buffer): any {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}
