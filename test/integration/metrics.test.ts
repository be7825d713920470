import t from 'tap';
import { isLoopbackAddress, metricsRoutes } from '../../src/http/routes/metrics-routes.ts';
import type { HttpRequest } from '../../src/http/types.ts';
import { Metrics } from '../../src/observability/metrics.ts';
import { StorageError } from '../../src/storage/object-store.ts';
import { expectError, startTestServer, type TestServer } from '../helpers/server.ts';
import { driverSettings } from '../helpers/storage.ts';
import { heldUpload, multipartBody, pngLike, send, uploadPath } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';

const UPLOAD_FILE = '/v1/cdn/media/:teamId/upload/file';
const UPLOAD_JSON = '/v1/cdn/media/:teamId/upload';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (comments skipped). */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The value of the one sample named `name` whose labels include `labels`; undefined when none. */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

async function scrape(server: TestServer, headers: Record<string, string> = {}): Promise<{ samples: Sample[]; text: string; contentType: string | null }> {
  const response = await fetch(`${server.baseUrl}/metrics`, { headers });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}: ${text}`);
  return { samples: parseExposition(text), text, contentType: response.headers.get('content-type') };
}


async function sendMultipart(server: TestServer, teamId: string, key: string, content: Buffer, fileName: string) {
  const { body, contentType } = multipartBody([{ content, fileName }]);
  const response = await send(server, 'POST', uploadPath(teamId), key, body, { 'content-type': contentType });
  return { response, bodyLength: body.length };
}

async function sendJson(server: TestServer, teamId: string, key: string, content: Buffer, fileName: string) {
  const body = Buffer.from(JSON.stringify({ file: content.toString('base64'), fileName }));
  const response = await send(server, 'POST', `/v1/cdn/media/${teamId}/upload`, key, body, { 'content-type': 'application/json' });
  return { response, bodyLength: body.length };
}

t.test('/metrics counts uploads, bytes, 429 and 503 refusals, and shows the gate, the pool and the event loop', async (t) => {
  const server = await startTestServer(t, {
    settings: { UPLOAD_CONCURRENCY: 1, UPLOAD_QUEUE_LIMIT: 1, UPLOAD_TEAM_MAX_SHARE: 1, RATE_LIMIT_POINTS: 3, RATE_LIMIT_DURATION_SECONDS: 60 },
  });
  const alpha = await server.createTeam('MetricsAlpha');
  const beta = await server.createTeam('MetricsBeta');
  const content = Buffer.alloc(32 * 1024, 5);

  const first = await scrape(server);
  t.match(first.contentType, /^text\/plain; version=0\.0\.4/, 'Prometheus text format');
  t.equal(valueOf(first.samples, 'media_uploads_in_flight'), 0);
  t.equal(valueOf(first.samples, 'media_uploads_queued'), 0);

  // Alpha: three uploads land (two multipart, one JSON), the fourth is over the key's rate limit.
  let multipartBytes = 0;
  const a1 = await sendMultipart(server, alpha.teamId, alpha.key, content, 'a1.bin');
  const a2 = await sendJson(server, alpha.teamId, alpha.key, content, 'a2.bin');
  const a3 = await sendMultipart(server, alpha.teamId, alpha.key, content, 'a3.bin');
  t.same([a1.response.status, a2.response.status, a3.response.status], [201, 201, 201]);
  multipartBytes += a1.bodyLength + a3.bodyLength;
  const limited = await sendMultipart(server, alpha.teamId, alpha.key, content, 'a4.bin');
  expectError(t, limited.response, 429, 'error.tooManyRequests');

  // Beta: one upload runs (held half-way), one waits, the next is refused with 503 uploadBusy.
  const gate = server.app.services.gate;
  const running = heldUpload(server, beta.teamId, beta.key, content);
  t.ok(await eventually(() => gate.running === 1), 'one upload runs');
  const waiting = heldUpload(server, beta.teamId, beta.key, content);
  waiting.finish();
  t.ok(await eventually(() => gate.waiting === 1), 'one upload waits');

  const during = await scrape(server);
  t.equal(valueOf(during.samples, 'media_uploads_in_flight'), 1, 'in-flight gauge: the running upload');
  t.equal(valueOf(during.samples, 'media_uploads_queued'), 1, 'queued gauge: the waiting upload');

  const busy = await sendMultipart(server, beta.teamId, beta.key, content, 'busy.bin');
  expectError(t, busy.response, 503, 'error.media.uploadBusy');

  running.finish();
  t.equal((await running.response).status, 201);
  t.equal((await waiting.response).status, 201);
  multipartBytes += running.bodyLength + waiting.bodyLength;
  t.ok(await eventually(() => gate.running + gate.waiting === 0), 'the gate is empty again');

  const { samples, text } = await scrape(server);
  t.equal(valueOf(samples, 'media_uploads_in_flight'), 0);
  t.equal(valueOf(samples, 'media_uploads_queued'), 0);

  t.equal(valueOf(samples, 'media_http_responses_total', { route: UPLOAD_FILE, status: '201' }), 4, 'four multipart uploads answered 201');
  t.equal(valueOf(samples, 'media_http_responses_total', { route: UPLOAD_JSON, status: '201' }), 1, 'one JSON upload answered 201');
  t.equal(valueOf(samples, 'media_http_responses_total', { route: UPLOAD_FILE, status: '429' }), 1);
  t.equal(valueOf(samples, 'media_http_responses_total', { route: UPLOAD_FILE, status: '503' }), 1);
  t.equal(valueOf(samples, 'media_http_responses_total', { route: '/v1/admin/teams', status: '201' }), 2, 'other routes are counted by pattern too');
  t.ok((valueOf(samples, 'media_http_responses_total', { route: '/metrics', status: '200' }) ?? 0) >= 2, 'and /metrics itself');
  t.equal(valueOf(samples, 'media_rate_limited_total'), 1, 'one 429');
  t.equal(valueOf(samples, 'media_upload_busy_total'), 1, 'one 503 uploadBusy');

  t.equal(valueOf(samples, 'media_upload_received_bytes_total', { route: 'multipart' }), multipartBytes, 'every body byte of the admitted multipart uploads');
  t.equal(valueOf(samples, 'media_upload_received_bytes_total', { route: 'json' }), a2.bodyLength, 'every body byte of the JSON upload');

  t.equal(valueOf(samples, 'media_upload_duration_seconds_count', { route: 'multipart', outcome: 'created' }), 4, 'duration histogram: four multipart uploads');
  t.equal(valueOf(samples, 'media_upload_duration_seconds_count', { route: 'json', outcome: 'created' }), 1, 'and one JSON upload');
  t.equal(valueOf(samples, 'media_upload_duration_seconds_bucket', { route: 'multipart', outcome: 'created', le: '+Inf' }), 4);
  t.ok((valueOf(samples, 'media_upload_duration_seconds_sum', { route: 'multipart', outcome: 'created' }) ?? 0) > 0);
  t.notOk(samples.some((sample) => sample.name.startsWith('media_upload_duration') && sample.labels['outcome'] !== 'created'), 'refused before admission: no duration');

  for (const stage of ['queue', 'receive', 'store', 'commit']) {
    t.equal(valueOf(samples, 'media_upload_stage_seconds_count', { stage }), 5, `stage ${stage}: timed once for each of the five created uploads`);
    t.ok((valueOf(samples, 'media_upload_stage_seconds_sum', { stage }) ?? 0) > 0, `stage ${stage}: some time`);
  }
  t.ok((valueOf(samples, 'media_upload_stage_seconds_bucket', { stage: 'queue', le: '0.0005' }) ?? 0) <= 4, 'the upload that waited for the running one counted its wait in the queue stage');

  t.match(text, /# TYPE media_storage_writer_errors_total counter/, 'storage-writer errors are exported (none yet)');
  t.notOk(samples.some((sample) => sample.name === 'media_storage_writer_errors_total'));

  const utilization = valueOf(samples, 'media_worker_pool_utilization');
  t.ok(utilization !== undefined && utilization >= 0 && utilization <= 1, `worker-pool utilisation ${utilization} in [0, 1]`);
  for (const name of ['media_event_loop_delay_p50_seconds', 'media_event_loop_delay_p99_seconds', 'media_event_loop_delay_max_seconds']) {
    const value = valueOf(samples, name);
    t.ok(value !== undefined && value >= 0 && value < 10, `${name} = ${value}`);
  }
  t.notOk(samples.some((sample) => sample.name.startsWith('nodejs_') || sample.name.startsWith('process_')), 'nothing from the global registry');
});

t.test('a storage failure during an upload counts as a storage-writer error', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('MetricsStorage');
  const store = server.app.services.store;
  const openWriter = store.openWriter.bind(store);
  store.openWriter = () => {
    throw new StorageError('storage does not answer', { code: 'unavailable', operation: 'write' });
  };
  const failed = await sendMultipart(server, team.teamId, team.key, Buffer.alloc(1024, 1), 'down.bin');
  expectError(t, failed.response, 503, 'error.serviceUnavailable');
  store.openWriter = openWriter;
  t.equal((await sendMultipart(server, team.teamId, team.key, Buffer.alloc(1024, 1), 'up.bin')).response.status, 201);

  const { samples } = await scrape(server);
  t.equal(valueOf(samples, 'media_storage_writer_errors_total', { code: 'unavailable' }), 1);
  t.equal(valueOf(samples, 'media_upload_duration_seconds_count', { route: 'multipart', outcome: 'failed' }), 1);
  t.equal(valueOf(samples, 'media_upload_duration_seconds_count', { route: 'multipart', outcome: 'created' }), 1);
  t.equal(valueOf(samples, 'media_upload_stage_seconds_count', { stage: 'commit' }), 1, 'stages are timed for created uploads only');
  t.equal(valueOf(samples, 'media_upload_stage_seconds_count', { stage: 'queue' }), 1);
  t.equal(valueOf(samples, 'media_upload_busy_total'), 0, 'a 503 that is not uploadBusy is not counted as one');
  t.equal(valueOf(samples, 'media_http_responses_total', { route: UPLOAD_FILE, status: '503' }), 1);
});

t.test('with METRICS_TOKEN set, /metrics needs it as a bearer token, even from loopback', async (t) => {
  const token = 'metrics-token-for-tests-0123456789';
  const server = await startTestServer(t, { settings: { METRICS_TOKEN: token } });
  expectError(t, await server.request('GET', '/metrics'), 401, 'error.unauthorized');
  expectError(t, await server.request('GET', '/metrics', { headers: { authorization: 'Bearer wrong-token-0123456789' } }), 401, 'error.unauthorized');
  expectError(t, await server.request('GET', '/metrics', { headers: { authorization: `Basic ${token}` } }), 401, 'error.unauthorized');
  expectError(t, await server.request('GET', '/metrics', { headers: { authorization: `Bearer ${token}x` } }), 401, 'error.unauthorized');
  const ok = await server.request('GET', '/metrics', { headers: { authorization: `Bearer ${token}` } });
  t.equal(ok.status, 200);
  t.match(ok.body, /# TYPE media_uploads_in_flight gauge/);
  const { samples } = await scrape(server, { authorization: `Bearer ${token}` });
  t.equal(valueOf(samples, 'media_http_responses_total', { route: '/metrics', status: '401' }), 4, 'the refusals were counted');
});

t.test('without METRICS_TOKEN, /metrics answers loopback clients only', async (t) => {
  const server = await startTestServer(t);
  const ok = await server.request('GET', '/metrics');
  t.equal(ok.status, 200, 'the test connects from 127.0.0.1');
  t.equal((await server.request('HEAD', '/metrics')).status, 200, 'HEAD too');

  // Other addresses cannot be reached from here; the handler sees what uWS would give it.
  const metrics = new Metrics();
  t.teardown(() => metrics.close());
  const [route] = metricsRoutes({ metrics, token: null });
  const call = (remoteAddress: string) =>
    Promise.resolve()
      .then(() => route!.handler({ remoteAddress, headers: {} } as unknown as HttpRequest))
      .then((result) => result.status, (error: { status?: number }) => error.status);
  t.equal(await call('10.1.2.3'), 403, 'a private IPv4 client is refused');
  t.equal(await call('0000:0000:0000:0000:0000:ffff:0a01:0203'), 403, 'also IPv4-mapped');
  t.equal(await call('2001:0db8:0000:0000:0000:0000:0000:0001'), 403, 'an IPv6 client is refused');
  t.equal(await call('127.0.0.1'), 200);

  // The forms uWS gives: dotted IPv4 on an IPv4 socket; on "::" the full hex form, IPv4 clients mapped.
  for (const address of ['127.0.0.1', '127.8.9.10', '0000:0000:0000:0000:0000:ffff:7f00:0001', '0000:0000:0000:0000:0000:0000:0000:0001', '::1', '::ffff:127.0.0.1']) {
    t.ok(isLoopbackAddress(address), `${address} is loopback`);
  }
  for (const address of ['', 'localhost', '128.0.0.1', '0.0.0.0', '0000:0000:0000:0000:0000:0000:0000:0000', '0000:0000:0000:0000:0000:ffff:0a00:0001', 'fe80::1']) {
    t.notOk(isLoopbackAddress(address), `${JSON.stringify(address)} is not loopback`);
  }
});

t.test('loopback is recognised in the address forms uWS really gives', async (t) => {
  // Listening on "::" (dual stack), an IPv4 client appears as an IPv4-mapped IPv6 address.
  const server = await startTestServer(t, { settings: { HOST: '::' } });
  const status = async (host: string) => (await fetch(`http://${host}:${server.app.port}/metrics`)).status;
  t.equal(await status('127.0.0.1'), 200, 'IPv4 loopback (mapped) is served');
  t.equal(await status('[::1]'), 200, 'IPv6 loopback is served');
  // Non-loopback clients are covered by the handler checks above: tests send traffic to loopback only.
});

t.test('on s3, media_s3_requests_total counts the requests sent by operation: none for small files kept in the database', async (t) => {
  const server = await startTestServer(t, {
    settings: { ...driverSettings('s3'), DATABASE_FILE_MAX_BYTES: 64 * 1024, THUMBNAIL_CONCURRENCY: 0, RATE_LIMIT_POINTS: 1000 },
  });
  const team = await server.createTeam('S3Requests');
  const WRITES = ['PutObject', 'CreateMultipartUpload', 'UploadPart', 'CompleteMultipartUpload'];
  const requests = async (operations: string[]) => {
    const { samples } = await scrape(server);
    return operations.reduce((sum, operation) => sum + (valueOf(samples, 'media_s3_requests_total', { operation }) ?? 0), 0);
  };
  const writesBefore = await requests(WRITES);

  const logs = await Promise.all(Array.from({ length: 10 }, (_, i) => sendJson(server, team.teamId, team.key, Buffer.alloc(8 * 1024, `line ${i}\n`), `server-${i}.log`)));
  t.same(logs.map(({ response }) => response.status), Array(10).fill(201), JSON.stringify(logs[0]!.response.body));
  t.equal(await requests(WRITES), writesBefore, '10 small logs: no request to S3');

  const { response: shot } = await sendMultipart(server, team.teamId, team.key, pngLike(300 * 1024), 'shot.png');
  t.equal(shot.status, 201, JSON.stringify(shot.body));
  t.ok((await requests(WRITES)) > writesBefore, 'a 300 KiB screenshot goes to S3, and is counted');

  const readsBefore = await requests(['GetObject']);
  const served = await fetch(shot.body.publicUrl as string);
  t.equal(served.status, 200);
  t.equal((await served.arrayBuffer()).byteLength, 300 * 1024);
  t.ok((await requests(['GetObject'])) > readsBefore, 'serving it reads it from S3: counted as GetObject');
});
