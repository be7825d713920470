import { request as httpRequest } from 'node:http';
import t from 'tap';
import type { Test } from 'tap';
import { SignedLinks } from '../../src/domain/media/signed-links.ts';
import { expectError, startTestServer, TEST_AUTH_SECRET, type TestServer } from '../helpers/server.ts';
import { closeS3Client, driverSettings, type Driver } from '../helpers/storage.ts';
import { KiB, MiB, pngLike, uploadJson, uploadMultipart } from '../helpers/uploads.ts';


interface RawResponse {
  status: number;
  headers: Headers;
  body: Buffer;
}

async function fetchRaw(server: TestServer, pathAndQuery: string, init: { method?: string; headers?: Record<string, string> } = {}): Promise<RawResponse> {
  const response = await fetch(`${server.baseUrl}${pathAndQuery}`, { method: init.method ?? 'GET', headers: init.headers });
  return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) };
}

/** The path and query of a link the service handed out (its host is the configured PUBLIC_URL, not the test port). */
function local(url: string): string {
  const parsed = new URL(url);
  return `${parsed.pathname}${parsed.search}`;
}

/** Downloads over node:http, stopping to read for `pauseMs` after the first chunk so the server meets backpressure. */
function slowDownload(server: TestServer, path: string, pauseMs: number): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${server.baseUrl}${path}`, (response) => {
      const chunks: Buffer[] = [];
      let paused = false;
      response.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        if (!paused) {
          paused = true;
          response.pause();
          setTimeout(() => response.resume(), pauseMs);
        }
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks) }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end();
  });
}

/** Starts a download and drops the connection after the first chunk. */
function abortedDownload(server: TestServer, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${server.baseUrl}${path}`, (response) => {
      let received = 0;
      response.once('data', (chunk: Buffer) => {
        received += chunk.length;
        request.destroy();
        resolve(received);
      });
    });
    request.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ECONNRESET') reject(error);
    });
    request.end();
  });
}

async function fileServingSuite(t: Test, driver: Driver): Promise<void> {
  const server = await startTestServer(t, { settings: { ...driverSettings(driver), RATE_LIMIT_POINTS: 100_000 } });
  const alpha = await server.createTeam('Alpha', 'enterprise');
  const beta = await server.createTeam('Beta', 'enterprise');

  const publicContent = pngLike(300 * KiB + 7);
  const publicUpload = await uploadMultipart(server, alpha.teamId, alpha.key, { fileName: 'shot 1.png', contentType: 'image/png', content: publicContent });
  t.equal(publicUpload.status, 201, 'public upload');
  const privateContent = pngLike(64 * KiB + 3);
  const privateUpload = await uploadJson(server, alpha.teamId, alpha.key, { file: privateContent.toString('base64'), fileName: 'secret.png' });
  t.equal(privateUpload.status, 201, 'private upload');
  t.equal(privateUpload.body.public, false);
  const binaryContent = Buffer.from('not a known type\u0000\u0001\u0002 just bytes');
  const binaryUpload = await uploadMultipart(server, alpha.teamId, alpha.key, { fileName: 'data.bin', content: binaryContent });
  t.equal(binaryUpload.status, 201, 'binary upload');
  const bigContent = pngLike(8 * MiB + 11);
  const bigUpload = await uploadMultipart(server, alpha.teamId, alpha.key, { fileName: 'big.png', content: bigContent });
  t.equal(bigUpload.status, 201, 'big upload');
  const betaUpload = await uploadMultipart(server, beta.teamId, beta.key, { fileName: 'beta.png', content: pngLike(1000) });
  t.equal(betaUpload.status, 201, 'other team upload');

  const publicPath = `/${publicUpload.body.path}`;
  const privatePath = `/${privateUpload.body.path}`;
  const size = publicContent.length;

  t.test(`${driver}: GET /{mediaId} gives the public link, or a signed one for a private file`, async (t) => {
    const pub = await server.media('GET', `/v1/cdn/media/${alpha.teamId}/${publicUpload.body.id}`, alpha.key);
    t.equal(pub.status, 200);
    t.same(Object.keys(pub.body), ['url', 'uploadedBy']);
    t.equal(pub.body.uploadedBy?.keyId, alpha.keyId, 'the key that uploaded it');
    t.equal(pub.body.url, publicUpload.body.publicUrl, 'the same link the upload answered');
    t.equal(local(pub.body.url), publicPath, 'no query on a public link');

    const priv = await server.media('GET', `/v1/cdn/media/${alpha.teamId}/${privateUpload.body.id}`, alpha.key);
    t.equal(priv.status, 200);
    const url = new URL(priv.body.url);
    t.equal(url.pathname, privatePath);
    t.match(url.search, /^\?expires=\d+&signature=[A-Za-z0-9_-]{43}$/);
    const expires = Number(url.searchParams.get('expires'));
    const now = Math.floor(Date.now() / 1000);
    t.ok(expires > now + 3590 && expires <= now + 3600, 'valid for one hour');
  });

  t.test(`${driver}: other teams' ids and keys`, async (t) => {
    expectError(t, await server.media('GET', `/v1/cdn/media/${alpha.teamId}/${publicUpload.body.id}`, beta.key), 401, 'error.unauthorized');
    expectError(t, await server.media('GET', `/v1/cdn/media/${alpha.teamId}/${betaUpload.body.id}`, alpha.key), 404, 'error.notFound');
    expectError(t, await server.media('GET', `/v1/cdn/media/${alpha.teamId}/00000000-0000-4000-8000-000000000000`, alpha.key), 404, 'error.notFound');
    expectError(t, await server.media('GET', `/v1/cdn/media/${alpha.teamId}/not-a-uuid`, alpha.key), 404, 'error.notFound');
    const betaFile = betaUpload.body.path.split('/').pop();
    t.equal((await fetchRaw(server, `/media/team/${alpha.teamId}/${betaFile}`)).status, 404, "another team's file under this team's path");
    t.equal((await fetchRaw(server, `/${betaUpload.body.path}`)).status, 200, 'under its own team it serves');
  });

  t.test(`${driver}: a public file is served with exact bytes and headers`, async (t) => {
    const response = await fetchRaw(server, publicPath);
    t.equal(response.status, 200);
    t.ok(response.body.equals(publicContent), 'exact bytes');
    t.equal(response.headers.get('content-type'), 'image/png');
    t.equal(response.headers.get('content-length'), String(size));
    t.equal(response.headers.get('etag'), `"${publicUpload.body.hash}"`);
    t.equal(response.headers.get('accept-ranges'), 'bytes');
    t.equal(response.headers.get('x-content-type-options'), 'nosniff');
    t.equal(response.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    t.equal(response.headers.get('cache-tag'), `media-${publicUpload.body.id},team-${alpha.teamId}`, 'tagged for a purge by tag');
    t.equal(response.headers.get('surrogate-key'), `media-${publicUpload.body.id} team-${alpha.teamId}`);
    t.equal(response.headers.get('content-disposition'), `inline; filename="shot 1.png"; filename*=UTF-8''shot%201.png`);

    const binary = await fetchRaw(server, `/${binaryUpload.body.path}`);
    t.equal(binary.status, 200);
    t.ok(binary.body.equals(binaryContent));
    t.equal(binary.headers.get('content-type'), binaryUpload.body.contentType);
    t.match(binary.headers.get('content-disposition'), /^attachment; filename="data\.bin"/, 'unknown types download, never render');

    t.equal((await fetchRaw(server, publicPath.replace(/\.png$/, '.jpg'))).status, 404, 'another extension');
    t.equal((await fetchRaw(server, publicPath.replace(/\.png$/, ''))).status, 404, 'no extension');
    t.equal((await fetchRaw(server, `/media/team/${alpha.teamId}/00000000-0000-4000-8000-000000000000.png`)).status, 404, 'unknown id');
    t.equal((await fetchRaw(server, `/media/team/${alpha.teamId}/..%2F..%2Fetc.png`)).status, 404, 'not an id');
  });

  t.test(`${driver}: If-None-Match answers 304`, async (t) => {
    const etag = `"${publicUpload.body.hash}"`;
    for (const value of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const response = await fetchRaw(server, publicPath, { headers: { 'if-none-match': value } });
      t.equal(response.status, 304, value);
      t.equal(response.body.length, 0);
      t.equal(response.headers.get('etag'), etag);
    }
    t.equal((await fetchRaw(server, publicPath, { headers: { 'if-none-match': '"other"' } })).status, 200);
  });

  t.test(`${driver}: Range answers 206 byte-exact, or 416`, async (t) => {
    const cases: Array<[string, number, number]> = [
      ['bytes=0-0', 0, 0],
      ['bytes=1000-2999', 1000, 2999],
      ['bytes=-100', size - 100, size - 1],
      [`bytes=${size - 5000}-`, size - 5000, size - 1],
      ['bytes=7-', 7, size - 1],
      [`bytes=${size - 1}-${size + 1000}`, size - 1, size - 1],
    ];
    for (const [range, start, end] of cases) {
      const response = await fetchRaw(server, publicPath, { headers: { range } });
      t.equal(response.status, 206, range);
      t.equal(response.headers.get('content-range'), `bytes ${start}-${end}/${size}`, `${range} Content-Range`);
      t.equal(response.headers.get('content-length'), String(end - start + 1), `${range} Content-Length`);
      t.ok(response.body.equals(publicContent.subarray(start, end + 1)), `${range} bytes`);
      t.equal(response.headers.get('etag'), `"${publicUpload.body.hash}"`);
    }
    for (const range of [`bytes=${size}-`, 'bytes=-0', 'bytes=0-1,5-6']) {
      const response = await fetchRaw(server, publicPath, { headers: { range } });
      t.equal(response.status, 416, range);
      t.equal(response.headers.get('content-range'), `bytes */${size}`);
    }
    const ignored = await fetchRaw(server, publicPath, { headers: { range: 'bytes=9-3' } });
    t.equal(ignored.status, 200, 'an invalid range is ignored');
    t.ok(ignored.body.equals(publicContent));
    const big = await fetchRaw(server, `/${bigUpload.body.path}`, { headers: { range: `bytes=${3 * MiB + 1}-${7 * MiB}` } });
    t.equal(big.status, 206);
    t.ok(big.body.equals(bigContent.subarray(3 * MiB + 1, 7 * MiB + 1)), 'a range of many chunks');
  });

  t.test(`${driver}: HEAD gives the headers only`, async (t) => {
    const head = await fetchRaw(server, publicPath, { method: 'HEAD' });
    t.equal(head.status, 200);
    t.equal(head.headers.get('content-length'), String(size));
    t.equal(head.headers.get('content-type'), 'image/png');
    t.equal(head.headers.get('etag'), `"${publicUpload.body.hash}"`);
    t.equal(head.body.length, 0);
    const ranged = await fetchRaw(server, publicPath, { method: 'HEAD', headers: { range: 'bytes=10-19' } });
    t.equal(ranged.status, 206);
    t.equal(ranged.headers.get('content-length'), '10');
    t.equal(ranged.headers.get('content-range'), `bytes 10-19/${size}`);
    t.equal((await fetchRaw(server, privatePath, { method: 'HEAD' })).status, 404);
    const after = await fetchRaw(server, publicPath);
    t.ok(after.body.equals(publicContent), 'the connection pool still works after HEAD');
  });

  t.test(`${driver}: private files need a valid, unexpired signature`, async (t) => {
    const missing = await fetchRaw(server, privatePath);
    t.equal(missing.status, 404, 'without a signature a private file does not exist');
    const link = await server.media('GET', `/v1/cdn/media/${alpha.teamId}/${privateUpload.body.id}`, alpha.key);
    const signed = local(link.body.url);
    const response = await fetchRaw(server, signed);
    t.equal(response.status, 200);
    t.ok(response.body.equals(privateContent), 'exact bytes');
    t.match(response.headers.get('cache-control'), /^private, max-age=(3599|3600)$/);
    t.equal(response.headers.get('cache-tag'), null, 'a signed answer is for the client alone: no CDN tags');
    t.equal(response.headers.get('x-content-type-options'), 'nosniff');
    const ranged = await fetchRaw(server, signed, { headers: { range: 'bytes=-10' } });
    t.equal(ranged.status, 206);
    t.ok(ranged.body.equals(privateContent.subarray(privateContent.length - 10)));

    const url = new URL(link.body.url);
    const expires = url.searchParams.get('expires')!;
    const signature = url.searchParams.get('signature')!;
    const flipped = (signature[0] === 'A' ? 'B' : 'A') + signature.slice(1);
    const tampered = [
      `${privatePath}?expires=${expires}&signature=${flipped}`,
      `${privatePath}?expires=${Number(expires) + 60}&signature=${signature}`,
      `${privatePath}?expires=${expires}`,
      `${privatePath}?signature=${signature}`,
      `${publicPath}?expires=${expires}&signature=${signature}`,
      `${privatePath.replace(/\.png$/, '.jpg')}?expires=${expires}&signature=${signature}`,
      `/media/team/${beta.teamId}/${privatePath.split('/').pop()}?expires=${expires}&signature=${signature}`,
    ];
    for (const path of tampered) {
      const refused = await fetchRaw(server, path);
      t.equal(refused.status, 403, path);
      t.equal(JSON.parse(refused.body.toString()).messageKey, 'error.forbidden');
    }

    // Signed exactly as the service signs, with the same derivation from the operator secret, but two hours ago.
    const past = new SignedLinks({ secret: TEST_AUTH_SECRET, now: () => Date.now() - 2 * 3600 * 1000 });
    const expired = await fetchRaw(server, `${privatePath}${past.sign(privatePath.slice(1))}`);
    t.equal(expired.status, 403, 'an expired link');
    t.match(JSON.parse(expired.body.toString()).message, /expired/);
    const fresh = new SignedLinks({ secret: TEST_AUTH_SECRET });
    t.equal((await fetchRaw(server, `${privatePath}${fresh.sign(privatePath.slice(1))}`)).status, 200, 'the same derivation, now');
    const other = new SignedLinks({ secret: 'another-secret' });
    t.equal((await fetchRaw(server, `${privatePath}${other.sign(privatePath.slice(1))}`)).status, 403, 'another secret');
    const unknown = `/media/team/${alpha.teamId}/00000000-0000-4000-8000-000000000000.png`;
    t.equal((await fetchRaw(server, `${unknown}${fresh.sign(unknown.slice(1))}`)).status, 404, 'a valid signature for nothing');
  });

  t.test(`${driver}: large files stream with backpressure, and a client that leaves stops the stream`, async (t) => {
    const path = `/${bigUpload.body.path}`;
    const slow = await slowDownload(server, path, 400);
    t.equal(slow.status, 200);
    t.ok(slow.body.equals(bigContent), 'a slow reader gets exact bytes');
    for (let index = 0; index < 3; index++) {
      const received = await abortedDownload(server, path);
      t.ok(received > 0 && received < bigContent.length, 'left early');
    }
    const after = await fetchRaw(server, path);
    t.equal(after.status, 200);
    t.ok(after.body.equals(bigContent), 'the service serves on after aborted downloads');
  });
}

t.teardown(closeS3Client);
for (const driver of ['fs', 's3'] as const) {
  await t.test(driver, (t) => fileServingSuite(t, driver));
}
