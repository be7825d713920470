// Runs the ObjectStore conformance suite against both drivers: fs (a temp dir) and s3 (a real
// S3 server: Ceph RGW from scripts/s3-test-server.sh, or whatever TEST_S3_* names).
//
// S3 settings: TEST_S3_ENDPOINT, TEST_S3_REGION, TEST_S3_BUCKET, TEST_S3_ACCESS_KEY_ID,
// TEST_S3_SECRET_ACCESS_KEY, TEST_S3_FORCE_PATH_STYLE; unset ones default to the local RGW test
// server. When no S3 server answers, the s3 part FAILS, unless TEST_S3_REQUIRED=0 (then skipped).
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
} from '@aws-sdk/client-s3';
import t from 'tap';
import { FsObjectStore } from '../../src/storage/fs/fs-object-store.ts';
import { S3ObjectStore } from '../../src/storage/s3/s3-object-store.ts';
import type { S3ObjectStoreOptions } from '../../src/storage/s3/s3-object-store.ts';
import { startRecordingProxy } from '../helpers/recording-proxy.ts';
import { runConformance } from './object-store-conformance.ts';

const MiB = 1024 * 1024;

t.setTimeout(600_000);

await runConformance(t, 'fs', async () => {
  const root = await mkdtemp(path.join(tmpdir(), 'object-store-fs-'));
  const notADirectory = path.join(root, '..', `${path.basename(root)}-file`);
  await writeFile(notADirectory, 'a file where the store expects a directory');
  return {
    store: new FsObjectStore({ root }),
    async pendingUploads(key) {
      // Temp files are named `<time>-<random>~<base64url key>.part`.
      const suffix = `~${Buffer.from(key).toString('base64url')}.part`;
      try {
        return (await readdir(path.join(root, '.uploads'))).filter((name) => name.endsWith(suffix)).length;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
        throw error;
      }
    },
    failingStores: [{ name: 'root is a file', make: () => new FsObjectStore({ root: notADirectory }) }],
    bytesUntilUploadExists: MiB,
    async close() {
      await rm(root, { recursive: true, force: true });
      await rm(notADirectory, { force: true });
    },
  };
});

t.test('fs: keys cannot reach the temp directory', async (t) => {
  const store = new FsObjectStore({ root: path.join(tmpdir(), 'object-store-fs-never-created') });
  t.throws(() => store.openWriter('.uploads/x', { contentType: 'text/plain' }), { name: 'StorageError', code: 'invalid-key' });
  await t.rejects(store.stat('.uploads/x'), { name: 'StorageError', code: 'invalid-key' });
  await t.rejects(store.abortStaleUpload({ key: '', uploadId: '../escape.part' }), { name: 'StorageError', code: 'invalid-key' });
});

t.test('fs: checkAccess fails when the directory cannot be created', async (t) => {
  const parent = await mkdtemp(path.join(tmpdir(), 'object-store-fs-check-'));
  t.teardown(() => rm(parent, { recursive: true, force: true }));
  const file = path.join(parent, 'a-file');
  await writeFile(file, 'not a directory');
  await t.rejects(new FsObjectStore({ root: path.join(file, 'files') }).checkAccess(), { name: 'StorageError', code: 'failed', message: /is not usable/ });
  await t.resolves(new FsObjectStore({ root: path.join(parent, 'files') }).checkAccess(), 'a directory that can be created is fine');
});

const env = process.env;
const setting = (name: string, fallback: string) => (env[name] === undefined || env[name] === '' ? fallback : env[name]!);
const s3Settings = {
  endpoint: setting('TEST_S3_ENDPOINT', 'http://127.0.0.1:7480'),
  region: setting('TEST_S3_REGION', 'us-east-1'),
  bucket: setting('TEST_S3_BUCKET', 'media-test'),
  accessKeyId: setting('TEST_S3_ACCESS_KEY_ID', 'media-test-access'),
  secretAccessKey: setting('TEST_S3_SECRET_ACCESS_KEY', 'media-test-secret-0123456789abcdef'),
  forcePathStyle: !/^(false|0|no)$/i.test(setting('TEST_S3_FORCE_PATH_STYLE', 'true')),
};
const s3Required = env.TEST_S3_REQUIRED !== '0';

/**
 * An HTTP proxy in front of the S3 server that breaks every PUT (UploadPart, PutObject) and
 * forwards everything else, so a writer fails mid-upload while its clean-up requests (abort,
 * list, delete) still get through. SigV4 stays valid: the Host header is passed on unchanged.
 */
async function startFaultyProxy(target: string, fault: 'http-500' | 'reset'): Promise<{ endpoint: string; close(): Promise<void> }> {
  const upstreamUrl = new URL(target);
  const agent = new http.Agent({ keepAlive: true });
  const server = http.createServer((request, response) => {
    if (request.method === 'PUT') {
      if (fault === 'reset') {
        request.socket.destroy();
        return;
      }
      request.resume();
      request.on('end', () => {
        response.writeHead(500, { 'content-type': 'application/xml' });
        response.end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>injected by the test proxy</Message></Error>');
      });
      return;
    }
    const { expect: _expect, ...headers } = request.headers;
    const upstream = http.request(
      { host: upstreamUrl.hostname, port: upstreamUrl.port, method: request.method, path: request.url, headers, agent },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    upstream.on('error', () => response.destroy());
    request.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      agent.destroy();
    },
  };
}

/** A port on 127.0.0.1 that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function s3Answers(endpoint: string): Promise<boolean> {
  try {
    await fetch(endpoint, { signal: AbortSignal.timeout(3_000) });
    return true; // any HTTP answer, even 403
  } catch {
    return false;
  }
}

if (!(await s3Answers(s3Settings.endpoint))) {
  const message =
    `no S3 server answers at ${s3Settings.endpoint} (TEST_S3_ENDPOINT): start one with ` +
    '`bash scripts/s3-test-server.sh start`, or set TEST_S3_REQUIRED=0 to skip the s3 driver';
  if (s3Required) t.fail(message);
  else t.test('ObjectStore conformance: s3', { skip: message }, () => undefined);
} else {
  await runConformance(t, 's3', async () => {
    // A prefix of its own per run, so parallel runs do not see each other's uploads.
    const keyPrefix = `conformance-tests/${Date.now().toString(36)}-${randomBytes(4).toString('hex')}/`;
    const options: S3ObjectStoreOptions = { ...s3Settings, keyPrefix };
    const store = new S3ObjectStore(options);
    // Looks at the bucket independently of the store under test.
    const raw = new S3Client({
      region: s3Settings.region,
      endpoint: s3Settings.endpoint,
      forcePathStyle: s3Settings.forcePathStyle,
      credentials: { accessKeyId: s3Settings.accessKeyId, secretAccessKey: s3Settings.secretAccessKey },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    const proxy500 = await startFaultyProxy(s3Settings.endpoint, 'http-500');
    const proxyReset = await startFaultyProxy(s3Settings.endpoint, 'reset');
    const unreachable = `http://127.0.0.1:${await closedPort()}`;
    const listUploads = async (prefix: string) =>
      (await raw.send(new ListMultipartUploadsCommand({ Bucket: s3Settings.bucket, Prefix: prefix }))).Uploads ?? [];
    return {
      store,
      async pendingUploads(key) {
        return (await listUploads(keyPrefix + key)).filter((upload) => upload.Key === keyPrefix + key).length;
      },
      failingStores: [
        { name: 'wrong secret', make: () => new S3ObjectStore({ ...options, secretAccessKey: `${s3Settings.secretAccessKey}-wrong` }) },
        { name: 'missing bucket', make: () => new S3ObjectStore({ ...options, bucket: `missing-${randomBytes(6).toString('hex')}` }) },
        { name: 'unreachable endpoint', make: () => new S3ObjectStore({ ...options, endpoint: unreachable }) },
        { name: 'HTTP 500 on every upload request', make: () => new S3ObjectStore({ ...options, endpoint: proxy500.endpoint }) },
        { name: 'connection reset on every upload request', make: () => new S3ObjectStore({ ...options, endpoint: proxyReset.endpoint }) },
      ],
      // The writer sends its first part (and creates the multipart upload) once it holds more than a part.
      bytesUntilUploadExists: store.partSize + 1,
      async close() {
        // Removes whatever the suite left under its prefix (each test has already checked for leftovers).
        for (const upload of await listUploads(keyPrefix)) {
          await raw.send(new AbortMultipartUploadCommand({ Bucket: s3Settings.bucket, Key: upload.Key, UploadId: upload.UploadId }));
        }
        const objects = (await raw.send(new ListObjectsV2Command({ Bucket: s3Settings.bucket, Prefix: keyPrefix }))).Contents ?? [];
        // One by one: DeleteObjects needs a request checksum, which older S3 servers do not all take.
        for (const object of objects) await raw.send(new DeleteObjectCommand({ Bucket: s3Settings.bucket, Key: object.Key }));
        if (objects.length > 0) t.comment(`s3: removed ${objects.length} object(s) the suite left under ${keyPrefix}`);
        await store.close();
        raw.destroy();
        await proxy500.close();
        await proxyReset.close();
      },
    };
  });

  t.test('s3: object bodies are signed over plain HTTP and sent UNSIGNED-PAYLOAD over TLS', async (t) => {
    const defaultCas = tls.getCACertificates('default');
    t.teardown(() => tls.setDefaultCACertificates(defaultCas));
    for (const overTls of [false, true]) {
      const proxy = await startRecordingProxy(s3Settings.endpoint, { tls: overTls, headers: ['x-amz-content-sha256'] });
      t.teardown(() => proxy.close());
      if (proxy.certificate) tls.setDefaultCACertificates([...defaultCas, proxy.certificate]);
      const store = new S3ObjectStore({ ...s3Settings, endpoint: proxy.endpoint, keyPrefix: `object-store-test-${randomBytes(4).toString('hex')}/` });
      t.teardown(() => store.close());
      for (const size of [300 * 1024, 7 * MiB]) {
        const key = `payload-${size}`;
        const data = randomBytes(size);
        const writer = store.openWriter(key, { contentType: 'application/octet-stream', expectedSize: size });
        for (let offset = 0; offset < size; offset += 64 * 1024) writer.write(data.subarray(offset, offset + 64 * 1024));
        await writer.finish();
        const stored: Buffer[] = [];
        for await (const chunk of await store.read(key)) stored.push(chunk as Buffer);
        t.ok(Buffer.concat(stored).equals(data), `${overTls ? 'TLS' : 'HTTP'}, ${size} bytes: read back whole`);
        await store.remove(key);
      }
      const bodies = proxy.requests.filter((request) => request.method === 'PUT' && !request.url.includes('x-id=CopyObject'));
      t.ok(bodies.length >= 3, `${overTls ? 'TLS' : 'HTTP'}: a PutObject and the parts of a multipart upload went through the proxy (${bodies.length})`);
      const hashes = bodies.map((request) => request.headers['x-amz-content-sha256']);
      if (overTls) t.same(new Set(hashes), new Set(['UNSIGNED-PAYLOAD']), 'TLS: every body is sent UNSIGNED-PAYLOAD');
      else t.same(hashes, bodies.map((request) => request.bodySha256), 'HTTP: every body is signed with its SHA-256');
      const others = proxy.requests.filter((request) => request.method !== 'PUT').map((request) => request.headers['x-amz-content-sha256']);
      t.notOk(others.includes('UNSIGNED-PAYLOAD'), 'requests without an object body keep their signed hash');
    }
  });
}
