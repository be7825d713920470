import { connect } from 'node:net';
import { Writable } from 'node:stream';
import t from 'tap';
import {
  badRequest, conflict, forbidden, missingArgument, notFound, payloadTooLarge, teamLimit, tooManyRequests,
  unauthorized, unsupportedMediaType, uploadBusy,
} from '../../src/errors/errors.ts';
import { Router } from '../../src/http/router.ts';
import { HttpServer } from '../../src/http/server.ts';
import { json } from '../../src/http/types.ts';
import { pino } from 'pino';
import { expectError, startTestServer } from '../helpers/server.ts';

// A real listening uWS server with routes that throw each error class.
const logLines: string[] = [];
const logger = pino({ level: 'debug' }, new Writable({ write(chunk, _encoding, done) { logLines.push(String(chunk)); done(); } }));
const router = new Router();
const thrown = {
  unauthorized: unauthorized(),
  forbidden: forbidden(),
  notFound: notFound('media file'),
  badRequest: badRequest(),
  missingArgument: missingArgument('fileName'),
  teamLimit: teamLimit('maxTeamStorage', 'Team storage is full'),
  conflict: conflict('Folder name already taken'),
  payloadTooLarge: payloadTooLarge(1000),
  unsupportedMediaType: unsupportedMediaType('Blocked file type'),
  tooManyRequests: tooManyRequests(7),
  uploadBusy: uploadBusy(5),
};
for (const [name, error] of Object.entries(thrown)) {
  router.add({ method: 'GET', pattern: `/throw/${name}`, handler: () => { throw error; } });
}
router.add({ method: 'GET', pattern: '/crash', handler: () => { throw new Error('SELECT secret FROM internals at /srv/app.ts:42'); } });
router.add({ method: 'GET', pattern: '/crash-async', handler: async () => { await Promise.resolve(); throw new TypeError('undefined is not a function'); } });
router.add({ method: 'POST', pattern: '/echo', handler: async (request) => json(200, await request.body.json(1024)) });
const httpServer = new HttpServer({ router, logger });
const port = await httpServer.listen('127.0.0.1', 0);
t.teardown(() => httpServer.close());
const base = `http://127.0.0.1:${port}`;

async function call(method: string, path: string, init: RequestInit = {}) {
  const response = await fetch(`${base}${path}`, { method, ...init });
  return { status: response.status, headers: response.headers, body: (await response.json()) as any };
}

t.test('each error class renders the spec error body', async (t) => {
  for (const [name, error] of Object.entries(thrown)) {
    const response = await call('GET', `/throw/${name}`);
    t.same(response.body, error.toBody(), name);
    t.equal(response.status, error.status, `${name} status`);
    t.equal(response.headers.get('content-type'), 'application/json; charset=utf-8');
  }
  const limit = await call('GET', '/throw/teamLimit');
  t.match(limit.body, { name: 'TeamLimitError', status: 402, messageKey: 'error.teamLimits.maxTeamStorage' });
  const missing = await call('GET', '/throw/missingArgument');
  t.same(missing.body, { name: 'MissingArgumentError', message: 'Missing argument: fileName.', status: 400, messageKey: 'error.missingArgument.fileName', value: 'fileName' });
  const busy = await call('GET', '/throw/uploadBusy');
  t.equal(busy.headers.get('retry-after'), '5');
  t.equal(busy.body.messageKey, 'error.media.uploadBusy');
  t.equal((await call('GET', '/throw/tooManyRequests')).headers.get('retry-after'), '7');
});

t.test('an unexpected exception is a 500 that leaks nothing and is logged with the request id', async (t) => {
  for (const path of ['/crash', '/crash-async']) {
    const response = await call('GET', path, { headers: { 'x-request-id': `req-${path.slice(1)}` } });
    t.equal(response.status, 500);
    t.same(response.body, {
      name: 'ServiceError', message: 'An unexpected error occurred', status: 500, messageKey: 'error.internalServerError', value: `req-${path.slice(1)}`,
    });
    t.equal(response.headers.get('x-request-id'), `req-${path.slice(1)}`);
    t.notMatch(JSON.stringify(response.body), /SELECT|internals|TypeError|\.ts/);
    const logged = logLines.map((line) => JSON.parse(line)).find((line) => line.requestId === `req-${path.slice(1)}` && line.level === 50);
    t.ok(logged, 'logged at error level with the request id');
    t.ok(logged?.err?.stack, 'the log keeps the stack');
  }
});

t.test('a generated request id comes back when none is supplied', async (t) => {
  const response = await fetch(`${base}/crash`);
  t.match(response.headers.get('x-request-id'), /^[0-9a-f-]{36}$/);
});

t.test('unknown route 404, wrong method 405, malformed JSON 400, body too large 413', async (t) => {
  expectError(t, await call('GET', '/nope'), 404, 'error.notFound');
  const wrongMethod = await call('DELETE', '/echo');
  expectError(t, wrongMethod, 405, 'error.methodNotAllowed');
  t.equal(wrongMethod.headers.get('allow'), 'POST');
  expectError(t, await call('POST', '/echo', { body: '{"a":' }), 400, 'error.badRequest');
  expectError(t, await call('POST', '/echo', { body: 'x'.repeat(2000) }), 413, 'error.payloadTooLarge');
  t.same((await call('POST', '/echo', { body: '{"a":1}' })).body, { a: 1 });
});

t.test('a chunked body that grows past the limit is 413', async (t) => {
  const stream = new ReadableStream({
    start(controller) {
      for (let i = 0; i < 4; i++) controller.enqueue(new TextEncoder().encode('x'.repeat(400)));
      controller.close();
    },
  });
  const response = await fetch(`${base}/echo`, { method: 'POST', body: stream, duplex: 'half' } as RequestInit);
  t.equal(response.status, 413);
  t.equal(((await response.json()) as any).messageKey, 'error.payloadTooLarge');
});

t.test('an invalid Content-Length is 400', async (t) => {
  const raw = await new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write('POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n');
    });
    let data = '';
    socket.on('data', (chunk) => { data += chunk; if (data.includes('}')) socket.end(); });
    socket.on('end', () => resolve(data));
    socket.on('close', () => resolve(data));
    socket.on('error', reject);
  });
  t.match(raw, /^HTTP\/1\.1 400/);
});

t.test('the service itself answers 404 and 405 with the error body', async (t) => {
  const server = await startTestServer(t);
  expectError(t, await server.request('GET', '/v1/cdn/nothing'), 404, 'error.notFound');
  expectError(t, await server.request('DELETE', '/healthz'), 405, 'error.methodNotAllowed');
  expectError(t, await server.request('POST', '/v1/admin/teams', { body: '{', headers: { authSecret: 'wrong' } }), 401, 'error.unauthorized');
});
