import { randomBytes } from 'node:crypto';
import { ListMultipartUploadsCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import t from 'tap';
import type { Test } from 'tap';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { startS3FaultProxy, type S3FaultProxy } from '../helpers/s3-fault-proxy.ts';
import { closeS3Client, driverSettings, s3, s3Client } from '../helpers/storage.ts';
import { expectNothingCounted, MiB, pngLike, teamStorageState, uploadJson, uploadMultipart } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';

// Issue 6: the S3-compatible server answers errors instead of going away. The service's s3 driver
// talks to Ceph RGW through an HTTP proxy on 127.0.0.1 that forwards everything until the test
// makes it answer chosen S3 operations with S3's own XML errors (500 InternalError, 503 SlowDown).
// Each fault holds for every matching request until heal(), so the SDK's own retries (3 attempts)
// all fail and the outcome does not depend on how often it retries. The bucket is checked straight
// at the real server, under a key prefix of this test's own.

const keyPrefix = `s3-errors-${randomBytes(4).toString('hex')}/`;

interface Bucket {
  objects: string[];
  multipartUploads: string[];
}

/** Everything under this test's prefix, read at the real server, bypassing the proxy. */
async function bucketState(): Promise<Bucket> {
  const listed = await s3Client().send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: keyPrefix }));
  const uploads = await s3Client().send(new ListMultipartUploadsCommand({ Bucket: s3.bucket, Prefix: keyPrefix }));
  return {
    objects: (listed.Contents ?? []).map((object) => object.Key!),
    multipartUploads: (uploads.Uploads ?? []).map((upload) => upload.Key!),
  };
}

/** Waits (bounded) until the bucket holds `objects` objects under the prefix and no multipart upload (aborts settle asynchronously). */
async function settledBucket(objects: number, timeoutMs = 10_000): Promise<Bucket> {
  let last = await bucketState();
  await eventually(async () => {
    last = await bucketState();
    return last.objects.length === objects && last.multipartUploads.length === 0;
  }, timeoutMs);
  return last;
}

function expectStorageUnavailable(t: Test, response: { status: number; body: any; headers: Headers }) {
  t.equal(response.status, 503, 'a 503');
  t.same(response.body, {
    name: 'ServiceUnavailableError',
    message: 'Storage is temporarily unavailable, retry later',
    status: 503,
    messageKey: 'error.serviceUnavailable',
  }, 'the spec error body, naming no S3 detail');
  t.equal(response.headers.get('retry-after'), '5', 'Retry-After');
}

async function expectServesAgain(t: Test, server: TestServer, team: { teamId: string; key: string }, objectsBefore: number) {
  const content = pngLike(9 * MiB); // past one 8 MiB part: a multipart upload
  const after = await uploadMultipart(server, team.teamId, team.key, { fileName: 'after.png', contentType: 'image/png', content });
  t.equal(after.status, 201, 'a multipart upload succeeds once S3 answers normally');
  t.equal(after.body.size, content.length);
  const small = await uploadJson(server, team.teamId, team.key, { file: pngLike(1000).toString('base64'), fileName: 'after-small.png' });
  t.equal(small.status, 201, 'a small (PutObject) upload succeeds too');
  const bucket = await settledBucket(objectsBefore + 2);
  t.equal(bucket.objects.length, objectsBefore + 2, 'both objects are in the bucket');
  t.same(bucket.multipartUploads, [], 'no multipart upload left');
}

t.test('S3 answering errors (s3 driver)', async (t) => {
  t.teardown(closeS3Client);
  const proxy: S3FaultProxy = await startS3FaultProxy(s3.endpoint);
  t.teardown(() => proxy.close());
  const server = await startTestServer(t, {
    settings: { ...driverSettings('s3'), S3_ENDPOINT: proxy.endpoint, S3_KEY_PREFIX: keyPrefix, RATE_LIMIT_POINTS: 100_000 },
  });
  t.teardown(async () => {
    // Whatever this test put in the bucket goes; its prefix is its own.
    const bucket = await bucketState().catch(() => ({ objects: [], multipartUploads: [] }));
    for (const key of bucket.objects) await server.app.services.store.remove(key.slice(keyPrefix.length)).catch(() => undefined);
  });
  const team = await server.createTeam('S3Errors', 'enterprise');

  t.test('CreateMultipartUpload answers 500 InternalError: 503, nothing counted, nothing in the bucket', async (t) => {
    const before = await teamStorageState(server.databaseUrl, team.teamId);
    const objectsBefore = (await bucketState()).objects.length;
    proxy.fail({ operations: ['CreateMultipartUpload'], status: 500, code: 'InternalError' });
    const response = await uploadMultipart(server, team.teamId, team.key, { fileName: 'big.png', contentType: 'image/png', content: pngLike(20 * MiB) });
    const failed = proxy.counts.failed.CreateMultipartUpload ?? 0;
    proxy.heal();
    expectStorageUnavailable(t, response);
    t.ok(failed >= 1, `the proxy refused CreateMultipartUpload (${failed} attempts)`);
    await expectNothingCounted(t, server, team.teamId, before);
    const bucket = await settledBucket(objectsBefore);
    t.equal(bucket.objects.length, objectsBefore, 'no object');
    t.same(bucket.multipartUploads, [], 'no multipart upload');
    await expectServesAgain(t, server, team, objectsBefore);
  });

  t.test('UploadPart answers 503 SlowDown mid-upload: 503, the multipart upload is aborted, nothing counted', async (t) => {
    const before = await teamStorageState(server.databaseUrl, team.teamId);
    const objectsBefore = (await bucketState()).objects.length;
    const partsBefore = proxy.counts.forwarded.UploadPart ?? 0;
    const abortsBefore = proxy.counts.forwarded.AbortMultipartUpload ?? 0;
    // The first part lands; every attempt at any later part is answered SlowDown.
    proxy.fail({ operations: ['UploadPart'], when: (request) => (request.partNumber ?? 0) >= 2, status: 503, code: 'SlowDown' });
    const response = await uploadMultipart(server, team.teamId, team.key, { fileName: 'big.png', contentType: 'image/png', content: pngLike(30 * MiB) });
    const failed = proxy.counts.failed.UploadPart ?? 0;
    proxy.heal();
    expectStorageUnavailable(t, response);
    t.ok((proxy.counts.forwarded.UploadPart ?? 0) > partsBefore, 'part 1 reached S3 (the multipart upload had data)');
    t.ok(failed >= 1, `the proxy answered SlowDown to later parts (${failed} attempts)`);
    t.ok((proxy.counts.forwarded.AbortMultipartUpload ?? 0) > abortsBefore, 'the service sent AbortMultipartUpload');
    await expectNothingCounted(t, server, team.teamId, before);
    const bucket = await settledBucket(objectsBefore);
    t.equal(bucket.objects.length, objectsBefore, 'no object');
    t.same(bucket.multipartUploads, [], 'no multipart upload left under the service prefix');
    await expectServesAgain(t, server, team, objectsBefore);
  });

  t.test('CompleteMultipartUpload answers 500: 503, no object and no multipart upload left, nothing counted', async (t) => {
    const before = await teamStorageState(server.databaseUrl, team.teamId);
    const objectsBefore = (await bucketState()).objects.length;
    proxy.fail({ operations: ['CompleteMultipartUpload'], status: 500, code: 'InternalError' });
    const response = await uploadMultipart(server, team.teamId, team.key, { fileName: 'big.png', contentType: 'image/png', content: pngLike(17 * MiB) });
    const failed = proxy.counts.failed.CompleteMultipartUpload ?? 0;
    proxy.heal();
    expectStorageUnavailable(t, response);
    t.ok(failed >= 1, `the proxy refused CompleteMultipartUpload (${failed} attempts)`);
    await expectNothingCounted(t, server, team.teamId, before);
    const bucket = await settledBucket(objectsBefore);
    t.equal(bucket.objects.length, objectsBefore, 'no object');
    t.same(bucket.multipartUploads, [], 'no multipart upload');
    await expectServesAgain(t, server, team, objectsBefore);
  });

  t.test('CompleteMultipartUpload answers 200 with an error in its body (an S3 quirk): 503, nothing left, nothing counted', async (t) => {
    const before = await teamStorageState(server.databaseUrl, team.teamId);
    const objectsBefore = (await bucketState()).objects.length;
    proxy.fail({ operations: ['CompleteMultipartUpload'], status: 200, code: 'InternalError' });
    const response = await uploadMultipart(server, team.teamId, team.key, { fileName: 'big.png', contentType: 'image/png', content: pngLike(17 * MiB) });
    proxy.heal();
    expectStorageUnavailable(t, response);
    await expectNothingCounted(t, server, team.teamId, before);
    const bucket = await settledBucket(objectsBefore);
    t.equal(bucket.objects.length, objectsBefore, 'no object');
    t.same(bucket.multipartUploads, [], 'no multipart upload');
    await expectServesAgain(t, server, team, objectsBefore);
  });

  t.test('PutObject (a small file) answers 503 SlowDown: 503 on both upload routes, nothing counted', async (t) => {
    const before = await teamStorageState(server.databaseUrl, team.teamId);
    const objectsBefore = (await bucketState()).objects.length;
    proxy.fail({ operations: ['PutObject'], status: 503, code: 'SlowDown' });
    const multipart = await uploadMultipart(server, team.teamId, team.key, { fileName: 'small.png', contentType: 'image/png', content: pngLike(300 * 1024) });
    const json = await uploadJson(server, team.teamId, team.key, { file: `data:image/png;base64,${pngLike(2000).toString('base64')}`, fileName: 'small.png' });
    proxy.heal();
    expectStorageUnavailable(t, multipart);
    expectStorageUnavailable(t, json);
    await expectNothingCounted(t, server, team.teamId, before);
    const bucket = await settledBucket(objectsBefore);
    t.equal(bucket.objects.length, objectsBefore, 'no object');
    await expectServesAgain(t, server, team, objectsBefore);
  });

  t.test('every request fails mid-upload, AbortMultipartUpload included: 503, and the upload is aborted once S3 heals', async (t) => {
    const before = await teamStorageState(server.databaseUrl, team.teamId);
    const objectsBefore = (await bucketState()).objects.length;
    // The multipart upload is created and its first part sent; from then on S3 answers 500 to everything.
    proxy.fail({
      when: (request) => request.operation !== 'CreateMultipartUpload' && !(request.operation === 'UploadPart' && request.partNumber === 1),
      status: 500,
      code: 'InternalError',
    });
    const response = await uploadMultipart(server, team.teamId, team.key, { fileName: 'big.png', contentType: 'image/png', content: pngLike(30 * MiB) });
    const abortsRefused = proxy.counts.failed.AbortMultipartUpload ?? 0;
    expectStorageUnavailable(t, response);
    await expectNothingCounted(t, server, team.teamId, before);
    t.ok(abortsRefused >= 1, `the abort was refused while S3 failed (${abortsRefused} attempts)`);
    const stuck = await bucketState();
    t.equal(stuck.multipartUploads.length, 1, 'the multipart upload is still there while S3 fails');

    proxy.heal();
    // The writer retries its clean-up in the background with backoff (1 s, 2 s, 4 s, ...).
    const bucket = await settledBucket(objectsBefore, 40_000);
    t.same(bucket.multipartUploads, [], 'the multipart upload is aborted soon after S3 heals');
    t.equal(bucket.objects.length, objectsBefore, 'no object');
    await expectNothingCounted(t, server, team.teamId, before);
    await expectServesAgain(t, server, team, objectsBefore);
  });
});
