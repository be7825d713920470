import { randomBytes } from 'node:crypto';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import t from 'tap';
import { connectPg } from '../helpers/database.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { closeS3Client, driverSettings, s3, s3Client, settledObjects, storedObjects } from '../helpers/storage.ts';
import { expectNothingCounted, MiB, pngLike, teamStorageState } from '../helpers/uploads.ts';
import { cuttingProxy, sha256, tusMetadata, tusRequest, tusUpload } from '../helpers/tus.ts';

// Resumable uploads (tus 1.0.0) on the s3 driver, through two instances sharing one database and
// one bucket, with the real client (tus-js-client).

t.teardown(closeS3Client);
const keyPrefix = `tus-${randomBytes(4).toString('hex')}/`;
const settings = { ...driverSettings('s3'), S3_KEY_PREFIX: keyPrefix, RATE_LIMIT_POINTS: 100_000 };
const first = await startTestServer(t, { settings });
const second = await startTestServer(t, { settings, databaseUrl: first.databaseUrl });

const tusPath = (teamId: string) => `/v1/cdn/media/${teamId}/tus`;

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** Tail objects (the not-yet-part-sized bytes) in the bucket. */
async function tailObjects(): Promise<string[]> {
  const listed = await s3Client().send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `${keyPrefix}tus/` }));
  return (listed.Contents ?? []).map((object) => object.Key!);
}

/** Multipart uploads of the team, under this file's key prefix. */
async function teamStorage(teamId: string) {
  const objects = await storedObjects('s3', '', `${teamId}`);
  const prefixed = await s3Client().send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `${keyPrefix}media/${teamId}/` }));
  return { objects: (prefixed.Contents ?? []).map((object) => object.Key!), unprefixed: objects.objects };
}

async function waitUnlocked(id: string): Promise<void> {
  const pg = await connectPg(first.databaseUrl);
  try {
    for (let attempt = 0; attempt < 400; attempt++) {
      const rows = await pg.query('select 1 from tus_upload where id = $1 and locked_until is null', [id]);
      if (rows.rows.length > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error('the upload stayed locked');
  } finally {
    await pg.end();
  }
}

async function multipartUploads(teamId: string): Promise<string[]> {
  const { ListMultipartUploadsCommand } = await import('@aws-sdk/client-s3');
  const uploads = await s3Client().send(new ListMultipartUploadsCommand({ Bucket: s3.bucket, Prefix: `${keyPrefix}media/${teamId}/` }));
  return (uploads.Uploads ?? []).map((upload) => upload.Key!);
}

t.test('s3: a 100 MiB upload cut twice resumes, the second time through the other instance; bytes identical', async (t) => {
  const team = await first.createTeam('TusS3Big', 'enterprise');
  const content = randomBytes(100 * MiB);
  // A proxy cuts the connection mid-PATCH after 23 and 61 MiB: the first time the client retries by
  // itself on the first instance; the second time it is stopped and a new client resumes on the second.
  const handOver = deferred<string>();
  const proxy = await cuttingProxy(first.app.port, [23 * MiB, 61 * MiB], (index) => {
    if (index === 1) void run.upload.abort().then(() => handOver.resolve(run.upload.url!));
  });
  t.teardown(() => proxy.close());
  const run = tusUpload(proxy, team.teamId, team.key, content, { metadata: { filename: 'match.mp4', filetype: 'video/mp4' } });
  const url = (await Promise.race([handOver.promise, run.done.then(() => { throw new Error('finished without the second cut'); })])).replace(proxy.baseUrl, first.baseUrl);
  const id = url.split('/').pop()!;
  await waitUnlocked(id);
  const pg = await connectPg(first.databaseUrl);
  t.teardown(() => pg.end());
  const row = (await pg.query('select "offset", part_count, tail_bytes from tus_upload where id = $1', [id])).rows[0];
  t.ok(Number(row.offset) > 0 && Number(row.offset) < content.length, `the bucket keeps ${row.offset} bytes`);
  t.equal(Number(row.offset), Number(row.part_count) * 5 * MiB + Number(row.tail_bytes), 'offset = whole parts + the tail');
  if (Number(row.tail_bytes) > 0) {
    const tail = await s3Client().send(new GetObjectCommand({ Bucket: s3.bucket, Key: `${keyPrefix}tus/${id}.part` }));
    const tailBytes = Buffer.from(await tail.Body!.transformToByteArray());
    const start = Number(row.part_count) * 5 * MiB;
    t.ok(tailBytes.subarray(0, Number(row.tail_bytes)).equals(content.subarray(start, start + Number(row.tail_bytes))), 'the tail object holds the bytes after the last part');
  }
  t.same(await multipartUploads(team.teamId), [`${keyPrefix}media/${team.teamId}/${id}`], 'one multipart upload, open across requests');

  const elsewhere = url.replace(first.baseUrl, second.baseUrl);
  const { mediaId } = await tusUpload(second, team.teamId, team.key, content, { uploadUrl: elsewhere, metadata: {} }).done;
  t.equal(mediaId, id, 'Media-Id on the final PATCH (the upload id)');
  const media = await first.media('GET', `/v1/cdn/media/${team.teamId}/${mediaId}`, team.key);
  const served = Buffer.from(await (await fetch(media.body.url)).arrayBuffer());
  t.equal(served.length, content.length);
  t.equal(sha256(served), sha256(content), 'the served bytes are the uploaded bytes');
  t.match(await teamStorageState(first.databaseUrl, team.teamId), { files: 1, sumOfSizes: content.length, usedStorage: content.length, reservedStorage: 0, reservations: 0 });
  t.same(await multipartUploads(team.teamId), [], 'the multipart upload is completed');
  t.same(await tailObjects(), [], 'no tail object left');
  const head = await tusRequest(first, 'HEAD', new URL(url).pathname, team.key);
  t.equal(head.headers.get('media-id'), mediaId, 'HEAD after completion names the media file, on either instance');
});

t.test('s3: concurrent PATCHes of one upload on two instances: one is refused with 423', async (t) => {
  const team = await first.createTeam('TusS3Lock', 'enterprise');
  const content = pngLike(12 * MiB);
  const created = await tusRequest(first, 'POST', tusPath(team.teamId), team.key, {
    'upload-length': String(content.length), 'upload-metadata': tusMetadata({ filename: 'a.png' }),
  });
  const path = created.headers.get('location')!;
  const patchOn = (target: TestServer) =>
    tusRequest(target, 'PATCH', path, team.key, { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, content);
  const answers = await Promise.all([patchOn(first), patchOn(second)]);
  const statuses = answers.map((answer) => answer.status).sort();
  t.ok(statuses.includes(204), `one PATCH stored the bytes (${statuses})`);
  t.ok(statuses.includes(423) || statuses.includes(409), 'the other was refused: locked, or (if it came after) at a stale offset');
  const state = await teamStorageState(first.databaseUrl, team.teamId);
  t.match(state, { files: 1, usedStorage: content.length, reservedStorage: 0, reservations: 0 }, 'stored and counted once');
});

t.test('s3: termination and expiry remove the multipart upload, the tail and the reservation', async (t) => {
  const team = await first.createTeam('TusS3Gone', 'enterprise');
  const before = await teamStorageState(first.databaseUrl, team.teamId);
  const paths: string[] = [];
  for (let i = 0; i < 2; i++) {
    const created = await tusRequest(first, 'POST', tusPath(team.teamId), team.key, {
      'upload-length': String(8 * MiB), 'upload-metadata': tusMetadata({ filename: `part${i}.png` }),
    });
    paths.push(created.headers.get('location')!);
    // 6 MiB: one 5 MiB part and a 1 MiB tail.
    const patched = await tusRequest(i === 0 ? first : second, 'PATCH', paths[i]!, team.key, { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, pngLike(6 * MiB));
    t.equal(patched.headers.get('upload-offset'), String(6 * MiB));
  }
  t.equal((await multipartUploads(team.teamId)).length, 2);
  t.equal((await tailObjects()).length, 2);
  // The crash sweep's age-based step leaves them alone: they are not crashed uploads.
  const early = await first.app.services.crashSweeper.runOnce(new Date(Date.now() + 3600_000));
  t.equal(early.tusExpired, 0);
  t.equal((await multipartUploads(team.teamId)).length, 2, 'the idle uploads keep their multipart uploads');

  t.equal((await tusRequest(second, 'DELETE', paths[0]!, team.key)).status, 204);
  t.equal((await multipartUploads(team.teamId)).length, 1);
  t.equal((await tailObjects()).length, 1);
  const swept = await second.app.services.crashSweeper.runOnce(new Date(Date.now() + 25 * 3600_000));
  t.equal(swept.tusExpired, 1);
  t.same(await multipartUploads(team.teamId), []);
  t.same(await tailObjects(), []);
  await expectNothingCounted(t, first, team.teamId, before);
  t.same((await settledObjects('s3', first.dataDir, team.teamId, 0)).objects, []);
  t.same((await teamStorage(team.teamId)).objects, []);
});
