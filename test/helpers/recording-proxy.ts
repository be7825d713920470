// An HTTP or HTTPS front for a real HTTP server (the tests' S3) that records what each request
// carried in the headers named and the SHA-256 of its body, and forwards it unchanged. For HTTPS it makes a self-signed
// certificate for 127.0.0.1 with openssl; a client trusts it through `certificate`.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

export interface RecordedRequest {
  method: string;
  url: string;
  headers: Record<string, string | undefined>;
  /** SHA-256 (hex) of the body as it passed, once the body has ended; null before. */
  bodySha256: string | null;
}

export interface RecordingProxy {
  endpoint: string;
  /** PEM of the self-signed certificate (HTTPS only). */
  certificate: string | null;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

async function selfSignedCertificate(): Promise<{ key: string; cert: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'recording-proxy-'));
  try {
    const keyFile = path.join(dir, 'key.pem');
    const certFile = path.join(dir, 'cert.pem');
    await promisify(execFile)('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', keyFile, '-out', certFile,
    ]);
    return { key: await readFile(keyFile, 'utf8'), cert: await readFile(certFile, 'utf8') };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function startRecordingProxy(backend: string, options: { tls: boolean; headers: string[] }): Promise<RecordingProxy> {
  const target = new URL(backend);
  const requests: RecordedRequest[] = [];
  const agent = new http.Agent({ keepAlive: true });
  const forward = (incoming: http.IncomingMessage, answer: http.ServerResponse) => {
    const headers: Record<string, string | undefined> = {};
    for (const name of options.headers) headers[name] = incoming.headers[name] as string | undefined;
    const recorded: RecordedRequest = { method: incoming.method ?? '', url: incoming.url ?? '', headers, bodySha256: null };
    requests.push(recorded);
    const bodyHash = createHash('sha256');
    incoming.on('data', (chunk: Buffer) => bodyHash.update(chunk));
    incoming.on('end', () => {
      recorded.bodySha256 = bodyHash.digest('hex');
    });
    // The Host header goes on as the client signed it; this server has answered Expect itself.
    const { expect: _expect, ...forwarded } = incoming.headers;
    const outgoing = http.request(
      { host: target.hostname, port: target.port, method: incoming.method, path: incoming.url, headers: forwarded, agent },
      (response) => {
        answer.writeHead(response.statusCode ?? 502, response.headers);
        response.pipe(answer);
      },
    );
    outgoing.on('error', () => answer.destroy());
    incoming.pipe(outgoing);
  };
  const certificate = options.tls ? await selfSignedCertificate() : null;
  const server = certificate ? https.createServer({ key: certificate.key, cert: certificate.cert }, forward) : http.createServer(forward);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    certificate: certificate?.cert ?? null,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
