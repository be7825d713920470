import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

// A real HTTP receiver for automation deliveries, on 127.0.0.1, started and stopped by the test.

export interface ReceivedWebhook {
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body, as signed. */
  body: string;
  json: any;
}

/** What the receiver answers: a status, or 'hang' (never answer; the request stays open until stop()). */
export type WebhookBehaviour = (request: ReceivedWebhook, index: number) => number | 'hang' | { status: number; headers?: Record<string, string>; body?: string };

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>` (the port stays the same across stop() and start()). */
  url: string;
  port: number;
  /** Every request received, in arrival order (also the ones answered with an error or held). */
  requests: ReceivedWebhook[];
  behave(behaviour: WebhookBehaviour): void;
  /** Stops listening and drops every connection (held requests included): the receiver is down. */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
}

/** Starts a receiver (answering 200 unless told otherwise), stopped at teardown. */
export async function startWebhookReceiver(t: { teardown(fn: () => unknown): void }, behaviour: WebhookBehaviour = () => 200): Promise<WebhookReceiver> {
  let current = behaviour;
  const requests: ReceivedWebhook[] = [];
  const sockets = new Set<Socket>();
  let server: Server | null = null;
  let port = 0;

  const answer = (response: ServerResponse, result: ReturnType<WebhookBehaviour>) => {
    if (result === 'hang') return;
    const { status, headers, body } = typeof result === 'number' ? { status: result, headers: {}, body: '' } : result;
    response.writeHead(status, { 'content-type': 'text/plain', ...headers });
    response.end(body ?? (status >= 200 && status < 300 ? 'ok' : `status ${status}`));
  };

  const listen = async () => {
    const created = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let json: unknown = null;
        try {
          json = JSON.parse(body);
        } catch {
          // leave null
        }
        const received: ReceivedWebhook = { path: request.url ?? '/', headers: request.headers, body, json };
        requests.push(received);
        answer(response, current(received, requests.length - 1));
      });
    });
    created.on('connection', (socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      created.once('error', reject);
      created.listen(port, '127.0.0.1', () => resolve());
    });
    port = (created.address() as { port: number }).port;
    server = created;
  };

  const stop = async () => {
    const closing = server;
    server = null;
    if (!closing) return;
    const closed = new Promise<void>((resolve) => closing.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    await closed;
  };

  await listen();
  t.teardown(stop);
  return {
    get url() {
      return `http://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    requests,
    behave: (next) => {
      current = next;
    },
    stop,
    start: listen,
  };
}
