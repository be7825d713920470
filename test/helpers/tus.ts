import { createHash } from 'node:crypto';
import { Upload, type UploadOptions } from 'tus-js-client';
import type { TestServer } from './server.ts';
import { startTcpProxy } from './tcp-proxy.ts';

export function tusEndpoint(server: { baseUrl: string }, teamId: string): string {
  return `${server.baseUrl}/v1/cdn/media/${teamId}/tus`;
}

export function sha256(content: Uint8Array): string {
  return createHash('sha256').update(content).digest('hex');
}

export interface TusRun {
  upload: Upload;
  /** Settles with the Media-Id of the final answer, or the client's error. */
  done: Promise<{ mediaId: string | null; url: string }>;
}

/**
 * One upload with the real tus client (tus-js-client). `cutAt` lists byte counts (as the client
 * reports them sent) at which the connection is cut mid-PATCH (abort()) and the same client is
 * started again, which resumes from the server's offset (HEAD).
 */
export function tusUpload(
  server: { baseUrl: string }, teamId: string, key: string, content: Buffer,
  options: Partial<UploadOptions> & { cutAt?: number[]; onCut?: (upload: Upload, sent: number) => void } = {},
): TusRun {
  const cuts = [...(options.cutAt ?? [])];
  let upload!: Upload;
  const done = new Promise<{ mediaId: string | null; url: string }>((resolve, reject) => {
    upload = new Upload(content, {
      endpoint: tusEndpoint(server, teamId),
      headers: { Authorization: `Bearer ${key}` },
      metadata: { filename: 'video.mp4', filetype: 'video/mp4' },
      retryDelays: [50, 100, 200, 500, 1000, 1000, 2000, 2000, 3000],
      ...options,
      onProgress: (sent, total) => {
        options.onProgress?.(sent, total);
        if (cuts.length > 0 && sent >= cuts[0]!) {
          cuts.shift();
          void upload.abort().then(() => {
            if (options.onCut) options.onCut(upload, sent);
            else upload.start();
          });
        }
      },
      onSuccess: (payload) => resolve({ mediaId: payload.lastResponse.getHeader('Media-Id') ?? null, url: upload.url! }),
      onError: reject,
    });
    upload.start();
  });
  return { upload, done };
}

/** A raw tus request (for the protocol's edges that the client never sends). */
export async function tusRequest(
  server: TestServer, method: string, path: string, key: string | null, headers: Record<string, string> = {}, body?: Buffer,
): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), 'tus-resumable': '1.0.0', ...headers },
    body,
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

/** Upload-Metadata as a tus client writes it. */
export function tusMetadata(pairs: Record<string, string>): string {
  return Object.entries(pairs).map(([key, value]) => `${key} ${Buffer.from(value).toString('base64')}`).join(',');
}

/**
 * A TCP proxy in front of `backendPort` that cuts every connection (reset, both sides) as soon as
 * the bytes it forwarded to the backend pass each of `cutAfter` in turn: a connection lost in the
 * middle of a PATCH, at a point the test controls (the client's own progress events lag far behind
 * the socket). `onCut` runs right after each cut with its index.
 */
export async function cuttingProxy(
  backendPort: number, cutAfter: number[], onCut: (index: number) => void = () => undefined,
): Promise<{ baseUrl: string; readonly forwarded: number; close(): Promise<void> }> {
  const proxy = await startTcpProxy(backendPort, { cutAfter, onCut });
  return {
    baseUrl: `http://${proxy.address}`,
    get forwarded() {
      return proxy.bytesToBackend;
    },
    close: () => proxy.close(),
  };
}

/** A proxy that loses the answer to the first request it forwards (the connection is reset once the backend starts answering). */
export async function firstAnswerLosingProxy(backendPort: number) {
  const proxy = await startTcpProxy(backendPort, { loseFirstAnswer: true });
  return {
    baseUrl: `http://${proxy.address}`,
    get lost() {
      return proxy.answerLost;
    },
    close: () => proxy.close(),
  };
}
