import { request as httpRequest } from 'node:http';
import t from 'tap';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { multipartBody, pngLike } from '../helpers/uploads.ts';

// CORS as docs/api.md describes it, over raw HTTP (node:http sends Origin as given; browsers: browser-cors.test.ts).

const FIVEM_ORIGIN = 'https://cfx-nui-screenshot-basic';

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** One request on a connection of its own (204 framing on kept-alive connections is the HTTP framing work's, not this test's). */
function raw(server: TestServer, method: string, path: string, headers: Record<string, string> = {}, body?: Buffer): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${server.baseUrl}${path}`, {
      method, agent: false, headers: body ? { ...headers, 'content-length': String(body.length) } : headers,
    });
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
    });
    request.on('error', reject);
    request.end(body);
  });
}

const listOf = (value: unknown) => String(value ?? '').split(',').map((item) => item.trim().toLowerCase());

function preflight(server: TestServer, path: string, origin: string, method = 'POST', requestHeaders = 'authorization, content-type') {
  return raw(server, 'OPTIONS', path, { origin, 'access-control-request-method': method, 'access-control-request-headers': requestHeaders });
}

t.test('CORS_ORIGINS=* (the default)', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('Alpha');
  const base = `/v1/cdn/media/${team.teamId}`;
  const auth = { authorization: `Bearer ${team.key}` };

  t.test('a preflight on every API route answers 204 with the allowed methods, headers and max age', async (t) => {
    const routes: [string, string][] = [
      ['POST', `${base}/upload/file`], ['POST', `${base}/upload`], ['GET', base], ['GET', `${base}/00000000-0000-4000-8000-000000000000`],
      ['PATCH', `${base}/update/00000000-0000-4000-8000-000000000000`], ['DELETE', `${base}/delete/00000000-0000-4000-8000-000000000000`],
      ['POST', `${base}/bulk`], ['GET', `${base}/folders`], ['GET', `${base}/tags`], ['GET', `${base}/usage`], ['POST', '/v1/admin/teams'],
      ['PATCH', `${base}/tus/some-upload`], ['GET', `/media/team/${team.teamId}/x.png`],
    ];
    for (const [method, path] of routes) {
      const response = await preflight(server, path, 'http://localhost:5173', method);
      t.equal(response.status, 204, `${method} ${path}`);
      t.equal(response.headers['access-control-allow-origin'], '*');
      t.ok(listOf(response.headers['access-control-allow-methods']).includes(method.toLowerCase()), `allows ${method}`);
      t.ok(Number(response.headers['access-control-max-age']) > 0, 'has a max age');
      t.equal(response.body.length, 0);
    }
    const allowed = listOf((await preflight(server, base, 'http://localhost:5173')).headers['access-control-allow-headers']);
    for (const name of [
      'authorization', 'content-type', 'pagenumber', 'pagesize', 'idempotency-key',
      'tus-resumable', 'upload-length', 'upload-offset', 'upload-metadata', 'upload-defer-length', 'upload-concat',
    ]) {
      t.ok(allowed.includes(name), `allows the request header ${name}`);
    }
  });

  t.test('every answer to an origin carries Allow-Origin and the exposed headers, errors included', async (t) => {
    const origin = { origin: 'http://localhost:5173' };
    const { body, contentType } = multipartBody([{ content: pngLike(300), fileName: 'shot.png', contentType: 'image/png' }]);
    const uploaded = await raw(server, 'POST', `${base}/upload/file`, { ...origin, ...auth, 'content-type': contentType }, body);
    const answers: [string, RawResponse, number][] = [
      ['upload', uploaded, 201],
      ['list', await raw(server, 'GET', base, { ...origin, ...auth }), 200],
      ['401 without a key', await raw(server, 'GET', base, origin), 401],
      ['404 no such route', await raw(server, 'GET', '/v1/nowhere', origin), 404],
      ['400 bad paging', await raw(server, 'GET', base, { ...origin, ...auth, pagesize: '0' }), 400],
      ['405 wrong method', await raw(server, 'PUT', base, { ...origin, ...auth }), 405],
    ];
    for (const [label, response, status] of answers) {
      t.equal(response.status, status, label);
      t.equal(response.headers['access-control-allow-origin'], '*', `${label}: Allow-Origin`);
      const exposed = listOf(response.headers['access-control-expose-headers']);
      for (const name of [
        'retry-after', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'x-request-id', 'location', 'upload-offset',
        'idempotent-replayed', 'media-id', 'upload-length', 'upload-expires', 'tus-resumable', 'tus-version', 'tus-extension', 'tus-max-size',
      ]) {
        t.ok(exposed.includes(name), `${label}: exposes ${name}`);
      }
      t.equal(response.headers['vary'], undefined, `${label}: no Vary with *`);
    }

    const media = JSON.parse(uploaded.body.toString());
    const served = await raw(server, 'GET', new URL(media.publicUrl).pathname, origin);
    t.equal(served.status, 200, 'the public file is served');
    t.equal(served.headers['access-control-allow-origin'], '*', 'served files carry Allow-Origin');
    t.equal(served.body.length, 300);
    const missing = await raw(server, 'GET', `/media/team/${team.teamId}/00000000-0000-4000-8000-000000000000.png`, origin);
    t.equal(missing.status, 404);
    t.equal(missing.headers['access-control-allow-origin'], '*', 'and so do their errors');
  });

  t.test('FiveM screenshot-basic from its NUI origin: preflight, then multipart with the field files[]', async (t) => {
    const check = await preflight(server, `${base}/upload/file`, FIVEM_ORIGIN, 'POST', 'authorization');
    t.equal(check.status, 204);
    t.equal(check.headers['access-control-allow-origin'], '*');
    t.ok(listOf(check.headers['access-control-allow-headers']).includes('authorization'));
    // screenshot-basic's NUI: FormData.append('files[]', blob, 'screenshot.jpg'), fetch(url, { mode: 'cors', headers }).
    const jpeg = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), pngLike(500).subarray(4)]);
    const { body, contentType } = multipartBody([{ field: 'files[]', fileName: 'screenshot.jpg', contentType: 'image/jpeg', content: jpeg }]);
    const response = await raw(server, 'POST', `${base}/upload/file`, { origin: FIVEM_ORIGIN, ...auth, 'content-type': contentType }, body);
    t.equal(response.status, 201, 'the first file of the form is taken');
    t.equal(response.headers['access-control-allow-origin'], '*');
    const media = JSON.parse(response.body.toString());
    const served = await raw(server, 'GET', new URL(media.publicUrl).pathname);
    t.same(served.body, jpeg, 'and served byte for byte');
  });

  t.test('a plain OPTIONS without Access-Control-Request-Method is not a preflight', async (t) => {
    const response = await raw(server, 'OPTIONS', base, { origin: 'http://localhost:5173' });
    t.equal(response.status, 405, 'routed as usual');
    t.equal(response.headers['access-control-allow-origin'], '*');
  });
});

t.test('CORS_ORIGINS as a list: exact origins only, with Vary: Origin', async (t) => {
  const server = await startTestServer(t, { settings: { CORS_ORIGINS: `http://localhost:5173, ${FIVEM_ORIGIN}` } });
  const team = await server.createTeam('Alpha');
  const base = `/v1/cdn/media/${team.teamId}`;
  const auth = { authorization: `Bearer ${team.key}` };

  for (const origin of ['http://localhost:5173', FIVEM_ORIGIN]) {
    const check = await preflight(server, base, origin, 'GET');
    t.equal(check.status, 204);
    t.equal(check.headers['access-control-allow-origin'], origin, `${origin}: the preflight names the origin`);
    t.match(check.headers['vary'], /Origin/);
    const listed = await raw(server, 'GET', base, { origin, ...auth });
    t.equal(listed.headers['access-control-allow-origin'], origin, `${origin}: the answer names the origin`);
    t.match(listed.headers['vary'], /Origin/);
  }

  const refused = await preflight(server, base, 'http://evil.example', 'GET');
  t.equal(refused.status, 204);
  t.equal(refused.headers['access-control-allow-origin'], undefined, 'an origin not listed gets no Allow-Origin on the preflight');
  t.equal(refused.headers['access-control-allow-headers'], undefined);
  const answer = await raw(server, 'GET', base, { origin: 'http://evil.example', ...auth });
  t.equal(answer.status, 200, 'the request itself is answered (the browser withholds it)');
  t.equal(answer.headers['access-control-allow-origin'], undefined, 'but without Allow-Origin');
  t.equal(answer.headers['access-control-expose-headers'], undefined);
  t.match(answer.headers['vary'], /Origin/, 'and still with Vary: Origin, for caches');
  const noOrigin = await raw(server, 'GET', base, auth);
  t.match(noOrigin.headers['vary'], /Origin/, 'Vary: Origin without an Origin too');
});

t.test('an empty CORS_ORIGINS turns CORS off', async (t) => {
  const server = await startTestServer(t, { settings: { CORS_ORIGINS: '' } });
  const team = await server.createTeam('Alpha');
  const base = `/v1/cdn/media/${team.teamId}`;
  const check = await preflight(server, base, 'http://localhost:5173', 'GET');
  t.equal(check.status, 405, 'no preflight answer: OPTIONS is routed like any method');
  t.equal(check.headers['access-control-allow-origin'], undefined);
  const listed = await raw(server, 'GET', base, { origin: 'http://localhost:5173', authorization: `Bearer ${team.key}` });
  t.equal(listed.status, 200);
  t.equal(listed.headers['access-control-allow-origin'], undefined);
  t.equal(listed.headers['vary'], undefined);
});
