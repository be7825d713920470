import t from 'tap';
import type { Test } from 'tap';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { closeS3Client, driverSettings, s3, settledObjects } from '../helpers/storage.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';
import { expectNothingCounted, MiB, multipartBody, pngLike, send, teamStorageState, uploadJson, uploadMultipart, uploadPath } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';

// Issue 6 point 4: backend faults against real processes. The S3-compatible server (Ceph RGW)
// and Redis are reached through a TCP proxy on 127.0.0.1 that the test cuts, refuses and restores;
// the bucket is checked straight at the real server, bypassing the proxy.

const redisUrl = new URL(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');

async function proxyFor(t: Test, port: number): Promise<TcpProxy> {
  const proxy = await startTcpProxy(port);
  t.teardown(() => proxy.close());
  return proxy;
}

function expectUnavailable(t: Test, response: { status: number; body: any; headers?: Headers }) {
  t.ok(response.status >= 500 && response.status <= 599, `a 5xx (got ${response.status})`);
  t.match(response.body, { name: String, message: String, status: response.status, messageKey: String }, 'the spec error body');
}

t.test('S3 behind a proxy the test controls', async (t) => {
  t.teardown(closeS3Client);
  const proxy = await proxyFor(t, Number(new URL(s3.endpoint).port || 80));
  const server = await startTestServer(t, {
    settings: { ...driverSettings('s3'), S3_ENDPOINT: `http://${proxy.address}`, RATE_LIMIT_POINTS: 100_000 },
  });

  t.test('connections cut mid-upload: 5xx, nothing counted, multipart upload swept, then serves normally', async (t) => {
    const team = await server.createTeam('Cut', 'enterprise');
    const before = await teamStorageState(server.databaseUrl, team.teamId);
    const { body, contentType } = multipartBody([{ fileName: 'big.png', contentType: 'image/png', content: pngLike(20 * MiB) }]);
    const sentBefore = proxy.bytesToBackend;
    const pending = send(server, 'POST', uploadPath(team.teamId), team.key, body, { 'content-type': contentType });
    t.ok(await eventually(() => proxy.bytesToBackend - sentBefore > 2 * MiB, 30_000), 'some of the file went through to S3');
    // The backend goes away: current connections are reset and new ones refused until restored.
    await proxy.refuse();
    proxy.cut();
    const response = await pending;
    expectUnavailable(t, response);
    await expectNothingCounted(t, server, team.teamId, before);

    await proxy.restore();
    // The writer's AbortMultipartUpload failed while S3 was unreachable; it retries in the
    // background with backoff, so the upload goes away soon after S3 is back.
    let stored = await settledObjects('s3', server.dataDir, team.teamId, before.files);
    for (let attempt = 0; attempt < 4 && stored.inProgress.length > 0; attempt++) {
      stored = await settledObjects('s3', server.dataDir, team.teamId, before.files);
    }
    t.equal(stored.objects.length, before.files, 'no object in the bucket');
    t.same(stored.inProgress, [], 'no multipart upload left in the bucket');

    const after = await uploadMultipart(server, team.teamId, team.key, { fileName: 'after.png', contentType: 'image/png', content: pngLike(MiB) });
    t.equal(after.status, 201, 'the next upload succeeds once S3 is back');
    const state = await teamStorageState(server.databaseUrl, team.teamId);
    t.equal(state.files, before.files + 1);
    t.equal(state.usedStorage, before.usedStorage + MiB);
  });

  t.test('connections refused: 5xx, nothing counted, then serves normally', async (t) => {
    const team = await server.createTeam('Refused', 'enterprise');
    const before = await teamStorageState(server.databaseUrl, team.teamId);
    await proxy.refuse();
    proxy.cut();
    const multipart = await uploadMultipart(server, team.teamId, team.key, { fileName: 'refused.png', contentType: 'image/png', content: pngLike(MiB) });
    expectUnavailable(t, multipart);
    const json = await uploadJson(server, team.teamId, team.key, { file: `data:image/png;base64,${pngLike(64 * 1024).toString('base64')}`, fileName: 'refused.png' });
    expectUnavailable(t, json);
    await expectNothingCounted(t, server, team.teamId, before);

    await proxy.restore();
    const stored = await settledObjects('s3', server.dataDir, team.teamId, before.files);
    t.equal(stored.objects.length, before.files, 'no new object in the bucket');
    t.same(stored.inProgress, [], 'no multipart upload left in the bucket');
    const after = await uploadMultipart(server, team.teamId, team.key, { fileName: 'back.png', contentType: 'image/png', content: pngLike(MiB) });
    t.equal(after.status, 201, 'uploads work again once S3 is back');
    t.equal((await teamStorageState(server.databaseUrl, team.teamId)).files, before.files + 1);
  });
});

t.test('Redis going away does not take uploads down', async (t) => {
  const proxy = await proxyFor(t, Number(redisUrl.port || 6379));
  const server = await startTestServer(t, {
    settings: { REDIS_URL: `redis://${proxy.address}`, RATE_LIMIT_POINTS: 1_000, RATE_LIMIT_DURATION_SECONDS: 60 },
  });
  const team = await server.createTeam('NoRedis');
  const upload = (name: string) => uploadMultipart(server, team.teamId, team.key, { fileName: name, contentType: 'image/png', content: pngLike(64 * 1024) });

  const first = await upload('with-redis.png');
  t.equal(first.status, 201, 'upload works with Redis');
  t.ok(first.headers.get('ratelimit-limit'), 'rate limit headers present');

  proxy.cut();
  const afterCut = await upload('after-cut.png');
  t.equal(afterCut.status, 201, 'upload works right after the Redis connection is cut');

  await proxy.refuse();
  proxy.cut();
  for (const name of ['refused-1.png', 'refused-2.png', 'refused-3.png']) {
    const response = await upload(name);
    t.equal(response.status, 201, `${name}: upload works while Redis refuses connections`);
    t.equal(response.headers.get('ratelimit-limit'), '1000', 'limits still applied, per instance');
  }

  await proxy.restore();
  const back = await upload('redis-back.png');
  t.equal(back.status, 201, 'upload works once Redis is back');
  t.equal((await teamStorageState(server.databaseUrl, team.teamId)).files, 6, 'every upload counted once');
});
