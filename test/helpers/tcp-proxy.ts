import { connect, createServer, type Server, type Socket } from 'node:net';

/** A TCP proxy on 127.0.0.1 in front of a loopback backend, so tests can cut, refuse and restore connections. */
export interface TcpProxy {
  port: number;
  /** host:port of the proxy. */
  address: string;
  /** Bytes forwarded from clients to the backend so far. */
  readonly bytesToBackend: number;
  /** With loseFirstAnswer: whether an answer was lost yet. */
  readonly answerLost: boolean;
  /** Resets every current connection (both sides); new connections are still accepted. */
  cut(): void;
  /** Stops listening, so new connections are refused (ECONNREFUSED); current ones stay. */
  refuse(): Promise<void>;
  /** Listens again on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

const LOOPBACK = '127.0.0.1';

export interface TcpProxyOptions {
  /**
   * Cut every connection as soon as the bytes forwarded to the backend pass each of these in turn:
   * a connection lost in the middle of a request body, at a point the test controls.
   */
  cutAfter?: number[];
  /** Runs right after each of those cuts, with its index. */
  onCut?: (index: number) => void;
  /** Reset the first connection whose backend starts answering, so its client never reads the answer. */
  loseFirstAnswer?: boolean;
}

export async function startTcpProxy(backendPort: number, options: TcpProxyOptions = {}): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const cuts = [...(options.cutAfter ?? [])];
  let cutIndex = 0;
  let bytesToBackend = 0;
  let answerLost = false;
  let server: Server | null = null;
  let port = 0;

  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
  };

  const listen = async (): Promise<void> => {
    const created = createServer((client) => {
      const backend = connect({ host: LOOPBACK, port: backendPort });
      track(client);
      track(backend);
      client.on('data', (chunk: Buffer) => {
        bytesToBackend += chunk.length;
        if (cuts.length > 0 && bytesToBackend >= cuts[0]!) {
          cuts.shift();
          cut();
          options.onCut?.(cutIndex++);
        }
      });
      client.pipe(backend);
      if (options.loseFirstAnswer) {
        backend.on('data', (chunk: Buffer) => {
          if (answerLost) {
            client.write(chunk);
            return;
          }
          answerLost = true;
          client.resetAndDestroy();
          backend.destroy();
        });
      } else {
        backend.pipe(client);
      }
      const end = () => {
        client.destroy();
        backend.destroy();
      };
      client.on('close', end);
      backend.on('close', end);
    });
    await new Promise<void>((resolve, reject) => {
      created.once('error', reject);
      created.listen(port, LOOPBACK, () => {
        created.off('error', reject);
        resolve();
      });
    });
    port = (created.address() as { port: number }).port;
    server = created;
  };

  const stopListening = async (): Promise<void> => {
    const current = server;
    server = null;
    // close() stops listening at once; its callback would wait for the current connections to end.
    if (current) current.close();
    await new Promise((resolve) => setImmediate(resolve));
  };

  const cut = () => {
    for (const socket of sockets) socket.resetAndDestroy();
    sockets.clear();
  };

  await listen();
  return {
    port,
    address: `${LOOPBACK}:${port}`,
    get bytesToBackend() {
      return bytesToBackend;
    },
    get answerLost() {
      return answerLost;
    },
    cut,
    async refuse() {
      await stopListening();
    },
    async restore() {
      if (!server) await listen();
    },
    async close() {
      cut();
      await stopListening();
    },
  };
}
