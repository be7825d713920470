import { randomBytes } from 'node:crypto';
import { Agent, createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

// An HTTP proxy on 127.0.0.1 in front of the real S3-compatible server of the tests. It forwards
// every request unchanged (the SigV4 signature covers the Host header the client sent, which is
// passed on as is) until a test tells it to answer chosen S3 operations with an S3 XML error, the
// way S3 itself answers when it is overloaded or broken: 500 InternalError, 503 SlowDown, ...
// While a fault is set, every matching request gets it (the SDK's own retries included), so a
// test does not depend on how many attempts the client makes.

export type S3Operation =
  | 'CreateMultipartUpload'
  | 'UploadPart'
  | 'CompleteMultipartUpload'
  | 'AbortMultipartUpload'
  | 'ListMultipartUploads'
  | 'PutObject'
  | 'GetObject'
  | 'HeadObject'
  | 'DeleteObject'
  | 'ListObjects'
  | 'Other';

export interface S3Request {
  operation: S3Operation;
  method: string;
  /** The object key (path after the bucket, decoded); '' for bucket requests. */
  key: string;
  query: URLSearchParams;
  /** For UploadPart. */
  partNumber: number | null;
}

export interface S3Fault {
  /** The operations that fail; every one when omitted. */
  operations?: S3Operation[];
  /** A further condition on the request, e.g. only parts from the second on. */
  when?: (request: S3Request) => boolean;
  /** HTTP status of the answer (default 500). */
  status?: number;
  /** S3 error code in the XML body (default InternalError for 500, SlowDown for 503). */
  code?: string;
}

export interface S3Counts {
  /** Requests passed on to the real server, per operation. */
  forwarded: Partial<Record<S3Operation, number>>;
  /** Requests answered with the fault, per operation. */
  failed: Partial<Record<S3Operation, number>>;
}

export interface S3FaultProxy {
  port: number;
  /** http://127.0.0.1:<port>, for S3_ENDPOINT. */
  endpoint: string;
  /** From now on, answer the matching requests with the fault (replaces any fault set before). */
  fail(fault: S3Fault): void;
  /** Forward everything again. */
  heal(): void;
  /**
   * From now on, keep the matching requests waiting, neither forwarded nor answered, until release();
   * resolves with the first one held. For a test that must act while a transfer is under way.
   */
  hold(when: (request: S3Request) => boolean): Promise<S3Request>;
  /** Drops the held requests' connections and forwards everything again. */
  release(): void;
  readonly counts: S3Counts;
  /** Every request passed on to the real server, in order. */
  readonly forwardedRequests: S3Request[];
  close(): Promise<void>;
}

const LOOPBACK = '127.0.0.1';
// Hop-by-hop headers belong to one connection, not to the request; `expect` was answered here (100 Continue).
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'expect']);

const MESSAGES: Record<string, string> = {
  InternalError: 'We encountered an internal error. Please try again.',
  SlowDown: 'Please reduce your request rate.',
  ServiceUnavailable: 'Service is unable to handle request.',
};

/** Which S3 operation a request is, from its method and query (path-style addressing: /bucket/key). */
export function classifyS3Request(method: string, url: string): S3Request {
  const parsed = new URL(url, 'http://s3.invalid');
  const query = parsed.searchParams;
  const [, , ...keyParts] = parsed.pathname.split('/');
  const key = decodeURIComponent(keyParts.join('/'));
  const partNumber = query.has('partNumber') ? Number(query.get('partNumber')) : null;
  const request = (operation: S3Operation): S3Request => ({ operation, method, key, query, partNumber });
  if (key === '') {
    if (method === 'GET' && query.has('uploads')) return request('ListMultipartUploads');
    if (method === 'GET') return request('ListObjects');
    return request('Other');
  }
  switch (method) {
    case 'POST':
      if (query.has('uploads')) return request('CreateMultipartUpload');
      if (query.has('uploadId')) return request('CompleteMultipartUpload');
      return request('Other');
    case 'PUT':
      if (query.has('uploadId') && query.has('partNumber')) return request('UploadPart');
      return request('PutObject');
    case 'DELETE':
      return request(query.has('uploadId') ? 'AbortMultipartUpload' : 'DeleteObject');
    case 'GET':
      return request('GetObject');
    case 'HEAD':
      return request('HeadObject');
    default:
      return request('Other');
  }
}

function errorXml(code: string, resource: string): string {
  const requestId = randomBytes(8).toString('hex').toUpperCase();
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<Error><Code>${code}</Code><Message>${MESSAGES[code] ?? code}</Message>` +
    `<Resource>${resource.replace(/[<>&]/g, '')}</Resource><RequestId>${requestId}</RequestId><HostId>fault-proxy</HostId></Error>`
  );
}

/** Starts the proxy in front of the S3 server at `backend` (http://host:port, a loopback address). */
export async function startS3FaultProxy(backend: string): Promise<S3FaultProxy> {
  const target = new URL(backend);
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const counts: S3Counts = { forwarded: {}, failed: {} };
  let fault: S3Fault | null = null;
  const forwardedRequests: S3Request[] = [];
  let holding: { when: (request: S3Request) => boolean; first: (request: S3Request) => void } | null = null;
  const held: ServerResponse[] = [];

  const matches = (request: S3Request): boolean =>
    fault !== null &&
    (fault.operations === undefined || fault.operations.includes(request.operation)) &&
    (fault.when === undefined || fault.when(request));

  const answerWithFault = (req: IncomingMessage, res: ServerResponse, active: S3Fault, s3Request: S3Request) => {
    counts.failed[s3Request.operation] = (counts.failed[s3Request.operation] ?? 0) + 1;
    const status = active.status ?? 500;
    const code = active.code ?? (status === 503 ? 'SlowDown' : 'InternalError');
    const body = req.method === 'HEAD' ? '' : errorXml(code, req.url ?? '/');
    // Read the request body to its end first, as S3 does, so the client sees an answer and not a reset.
    req.resume();
    req.on('end', () => {
      res.writeHead(status, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body), 'x-amz-request-id': 'fault-proxy' });
      res.end(body);
    });
  };

  const forward = (req: IncomingMessage, res: ServerResponse, s3Request: S3Request) => {
    counts.forwarded[s3Request.operation] = (counts.forwarded[s3Request.operation] ?? 0) + 1;
    forwardedRequests.push(s3Request);
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    }
    const upstream = httpRequest({
      host: target.hostname,
      port: Number(target.port || 80),
      method: req.method,
      path: req.url,
      headers,
      agent,
    });
    upstream.on('response', (answer) => {
      const answerHeaders: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(answer.headers)) {
        if (value !== undefined && !HOP_BY_HOP.has(name)) answerHeaders[name] = value;
      }
      res.writeHead(answer.statusCode ?? 502, answerHeaders);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.on('error', () => upstream.destroy());
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  };

  const server: Server = createServer((req, res) => {
    const s3Request = classifyS3Request(req.method ?? 'GET', req.url ?? '/');
    const active = fault;
    if (holding?.when(s3Request)) {
      held.push(res);
      holding.first(s3Request);
    } else if (active && matches(s3Request)) answerWithFault(req, res, active, s3Request);
    else forward(req, res, s3Request);
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, LOOPBACK, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as { port: number }).port;
  return {
    port,
    endpoint: `http://${LOOPBACK}:${port}`,
    fail(next) {
      fault = next;
    },
    heal() {
      fault = null;
    },
    hold(when) {
      return new Promise<S3Request>((resolve) => {
        let resolved = false;
        holding = { when, first: (request) => {
          if (!resolved) resolve(request);
          resolved = true;
        } };
      });
    },
    release() {
      holding = null;
      for (const res of held.splice(0)) res.destroy();
    },
    counts,
    forwardedRequests,
    async close() {
      fault = null;
      holding = null;
      for (const res of held.splice(0)) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
