import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { DeleteObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import sharp from 'sharp';
import t from 'tap';
import { PreviewProcess } from '../../src/previews/preview-process.ts';
import { createTeam, prepareInstance, startService, upload as uploadToProcess } from '../helpers/crashed-instance.ts';
import { connectPg } from '../helpers/database.ts';
import { startTestServer, type CreatedTeam, type TestServer } from '../helpers/server.ts';
import { closeS3Client, DRIVERS_OF_THIS_PASS, driverSettings, s3, s3Client, storedObjects } from '../helpers/storage.ts';
import { uploadMultipart } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';

// Issue 35.1: thumbnails of image uploads, made after the commit in the worker pool with sharp, on
// fs and s3: every image type (by its sniffed type), upright by EXIF orientation, never enlarged;
// none for other types; a corrupt image and a decompression bomb marked failed and never retried;
// public and private links; removed with the file; a claim left by a dead instance taken over, and
// given back at once by an instance restarting after SIGKILL; two instances on one database making
// each thumbnail once.

t.teardown(closeS3Client);

const solid = (width: number, height: number) => sharp({ create: { width, height, channels: 3, background: { r: 40, g: 120, b: 200 } } });
const noise = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: { r: 0, g: 0, b: 0 }, noise: { type: 'gaussian', mean: 128, sigma: 40 } } });

const images = {
  png: { content: await solid(800, 600).png().toBuffer(), fileName: 'shot.png', expected: [320, 240] },
  // Stored 600x300 with EXIF orientation 6 (turn right): upright it is 300x600.
  jpeg: { content: await solid(600, 300).jpeg().withMetadata({ orientation: 6 }).toBuffer(), fileName: 'phone.jpg', expected: [160, 320] },
  webp: { content: await solid(400, 200).webp().toBuffer(), fileName: 'map.webp', expected: [320, 160] },
  // Smaller than a thumbnail: not enlarged.
  gif: { content: await solid(100, 80).gif().toBuffer(), fileName: 'icon.gif', expected: [100, 80] },
  avif: { content: await solid(640, 480).avif({ effort: 0 }).toBuffer(), fileName: 'photo.avif', expected: [320, 240] },
  // Larger than DATABASE_FILE_MAX_BYTES (64 KiB here): kept in the object store, the others in the
  // database; on fs the preview process reads its file itself, the others' bytes are sent to it.
  large: { content: await noise(900, 600).png().toBuffer(), fileName: 'screenshot.png', expected: [320, 213] },
} as const;

/** A real PNG whose header claims 16384 x 16384 pixels: a decompression bomb, refused before decoding. */
function bombPng(): Promise<Buffer> {
  return solid(8, 8).png().toBuffer().then((png) => {
    const bomb = Buffer.from(png);
    bomb.writeUInt32BE(16_384, 16);
    bomb.writeUInt32BE(16_384, 20);
    bomb.writeUInt32BE(crc32(bomb.subarray(12, 29)) >>> 0, 29);
    return bomb;
  });
}

async function upload(server: TestServer, team: CreatedTeam, content: Buffer, fileName: string, query = 'public=true'): Promise<string> {
  const response = await uploadMultipart(server, team.teamId, team.key, { content, fileName }, query);
  if (response.status !== 201) throw new Error(`upload of ${fileName}: ${response.status} ${JSON.stringify(response.body)}`);
  t.equal(response.body.thumbnailUrl, null, `${fileName}: no thumbnail in the upload's answer (made after it)`);
  return response.body.id;
}

async function thumbnailRows(databaseUrl: string): Promise<Map<string, { status: string | null; attempts: number; error: string | null; location: string | null }>> {
  const pg = await connectPg(databaseUrl);
  try {
    const { rows } = await pg.query('select id, thumbnail_status, thumbnail_attempts, thumbnail_error, storage_location from media_file');
    return new Map(rows.map((row) => [row.id, { status: row.thumbnail_status, attempts: row.thumbnail_attempts, error: row.thumbnail_error, location: row.storage_location }]));
  } finally {
    await pg.end();
  }
}

async function settled(databaseUrl: string, timeoutMs = 60_000): Promise<boolean> {
  return eventually(async () => [...(await thumbnailRows(databaseUrl)).values()].every((row) => row.status !== 'pending'), timeoutMs);
}

async function records(server: TestServer, team: CreatedTeam): Promise<Map<string, { thumbnailUrl: string | null; public: boolean }>> {
  const listed = await server.media('GET', `/v1/cdn/media/${team.teamId}?pageSize=100`, team.key);
  return new Map(listed.body.media.map((record: { id: string }) => [record.id, record]));
}

async function fetchImage(url: string): Promise<{ status: number; type: string | null; width?: number; height?: number; cache: string | null }> {
  const response = await fetch(url);
  const bytes = Buffer.from(await response.arrayBuffer());
  if (response.status !== 200) return { status: response.status, type: null, cache: null };
  const { width, height, format } = await sharp(bytes).metadata();
  return { status: 200, type: `${response.headers.get('content-type')} (${format})`, width, height, cache: response.headers.get('cache-control') };
}

for (const driver of DRIVERS_OF_THIS_PASS) {
  t.test(`${driver}: thumbnails of every image type, none for others, failures marked`, async (t) => {
    const server = await startTestServer(t, { settings: { ...driverSettings(driver), DATABASE_FILE_MAX_BYTES: 65_536 } });
    const team = await server.createTeam('Gallery', 'enterprise');
    const ids: Record<string, string> = {};
    for (const [kind, image] of Object.entries(images)) ids[kind] = await upload(server, team, image.content, image.fileName);
    // Named .png, sniffed as text: no thumbnail. Sniffed as PNG but not one: failed.
    ids.text = await upload(server, team, Buffer.from('not an image at all\n'), 'fake.png');
    ids.corrupt = await upload(server, team, Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.alloc(2_000, 7)]), 'broken.png');
    ids.bomb = await upload(server, team, await bombPng(), 'bomb.png');
    ids.private = await upload(server, team, images.png.content, 'secret.png', 'public=false');

    t.ok(await settled(server.databaseUrl), 'every thumbnail is made or marked failed');
    const rows = await thumbnailRows(server.databaseUrl);
    const listed = await records(server, team);
    for (const [kind, image] of Object.entries(images)) {
      t.match(rows.get(ids[kind]!), { status: 'ready', attempts: 1, error: null }, `${kind}: made once`);
      const thumbnail = await fetchImage(listed.get(ids[kind]!)!.thumbnailUrl!);
      t.match(thumbnail, { status: 200, type: 'image/webp (webp)', width: image.expected[0], height: image.expected[1], cache: /public, max-age=31536000/ }, `${kind}: a WebP of the expected size`);
    }
    t.match(rows.get(ids.large!)!.location, driver === 'fs' ? /^fs$/ : new RegExp(`^s3:${s3.bucket}`), 'the large image is in the object store');
    t.match(rows.get(ids.png!), { location: 'db' }, 'the small ones in the database');
    t.match(rows.get(ids.text!), { status: null }, 'a text file is never queued');
    t.equal(listed.get(ids.text!)!.thumbnailUrl, null);
    t.match(rows.get(ids.corrupt!), { status: 'failed', attempts: 1 }, 'a corrupt image fails once and is not retried');
    t.match(rows.get(ids.bomb!), { status: 'failed', attempts: 1, error: /pixel limit/ }, 'a 16k x 16k image is refused by the pixel limit');
    t.equal(listed.get(ids.corrupt!)!.thumbnailUrl, null);
    t.equal(listed.get(ids.bomb!)!.thumbnailUrl, null);

    // Private: a signed link; without its signature the thumbnail is as unknown as the file.
    const signed = listed.get(ids.private!)!.thumbnailUrl!;
    t.match(signed, /\/thumbnails\/[0-9a-f-]{36}\.webp\?expires=\d+&signature=/);
    t.match(await fetchImage(signed), { status: 200, width: 320, height: 240, cache: /^private, max-age=\d+/ });
    t.equal((await fetchImage(signed.split('?')[0]!)).status, 404, 'unsigned: 404');
    t.equal((await fetchImage(`${signed.split('&signature=')[0]}&signature=${'0'.repeat(43)}`)).status, 403, 'a wrong signature: 403');

    // Thumbnails are not counted against the team's storage.
    const sizes = Object.values(images).reduce((sum, image) => sum + image.content.length, 0) + images.png.content.length + 20 + 2_008 + (await bombPng()).length;
    t.equal(await listedUsed(server, team), sizes, 'used storage counts the files only');

    // A file made private: its public thumbnail link answers 404 at once, and its record has a signed one.
    const webpLink = listed.get(ids.webp!)!.thumbnailUrl!;
    const updated = await server.media('PATCH', `/v1/cdn/media/${team.teamId}/update/${ids.webp}`, team.key, { body: { public: false } });
    t.match(updated.body.thumbnailUrl, /\?expires=\d+&signature=/, 'the private file\'s record has a signed thumbnail link');
    t.equal((await fetchImage(webpLink)).status, 404, 'its public thumbnail link answers 404');

    // Deleting a file removes its thumbnail from storage and its link answers 404.
    const before = await storedObjects(driver, server.dataDir, team.teamId, 'thumbnails');
    t.equal(before.objects.length, 7, 'seven thumbnails stored');
    const pngLink = listed.get(ids.png!)!.thumbnailUrl!;
    t.equal((await server.media('DELETE', `/v1/cdn/media/${team.teamId}/delete/${ids.png}`, team.key)).status, 200);
    t.equal((await fetchImage(pngLink)).status, 404, 'the deleted file\'s thumbnail link answers 404');
    t.equal((await storedObjects(driver, server.dataDir, team.teamId, 'thumbnails')).objects.length, 6, 'its thumbnail is removed from storage');
  });
}

for (const driver of DRIVERS_OF_THIS_PASS) {
  t.test(`${driver}: an image lost from storage before its thumbnail is marked failed, not retried`, async (t) => {
    const uploader = await startTestServer(t, { settings: { ...driverSettings(driver), THUMBNAIL_CONCURRENCY: 0 } });
    const team = await uploader.createTeam('Lost', 'enterprise');
    const id = await upload(uploader, team, images.large.content, 'lost.png');
    const [object] = (await storedObjects(driver, uploader.dataDir, team.teamId)).objects;
    if (driver === 'fs') await rm(object!);
    else await s3Client().send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: object! }));
    await startTestServer(t, { settings: driverSettings(driver), databaseUrl: uploader.databaseUrl, dataDir: uploader.dataDir });
    t.ok(await settled(uploader.databaseUrl), 'settled');
    t.match((await thumbnailRows(uploader.databaseUrl)).get(id), { status: 'failed', attempts: 1, error: 'the file is not in storage' });
  });
}

t.test('on s3 the preview process reads the image from the bucket itself, and its requests are counted', { skip: DRIVERS_OF_THIS_PASS.includes('s3') ? false : 'fs only in this pass' }, async (t) => {
  const requests: string[] = [];
  const previews = new PreviewProcess({
    logger: { warn: () => undefined },
    s3: { ...s3, forcePathStyle: true, keyPrefix: '' },
    onS3Request: (operation) => requests.push(operation),
  });
  t.teardown(() => previews.close());
  t.ok(previews.readsObjects);
  const key = `preview-process-test/${Date.now()}.png`;
  await s3Client().send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: images.large.content }));
  t.teardown(() => s3Client().send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: key })));
  const options = { maxSide: 320, maxPixels: 100_000_000, quality: 75 };
  t.match(await previews.thumbnail({ key }, options), { outcome: 'made', width: 320, height: 213 });
  t.same(requests, ['GetObject'], 'one GetObject, told to the service');
  t.same(await previews.thumbnail({ key: `${key}.gone` }, options), { kind: 'thumbnail', outcome: 'missing' }, 'a missing object answers missing');
});

t.test('a preview process whose S3 cannot be reached fails the thumbnail (retried later), not as missing', async (t) => {
  const unreachable = new PreviewProcess({
    logger: { warn: () => undefined },
    s3: { ...s3, endpoint: 'http://127.0.0.1:9', forcePathStyle: true, keyPrefix: '' },
  });
  t.teardown(() => unreachable.close());
  await t.rejects(unreachable.thumbnail({ key: 'any.png' }, { maxSide: 320, maxPixels: 100_000_000, quality: 75 }), { message: /ECONNREFUSED|connect/i });
});

/** Videos made with ffmpeg (`.ci/run` installs Debian's): 640x360, two seconds; null without ffmpeg. */
async function videos(): Promise<{ fileName: string; content: Buffer }[] | null> {
  try {
    execFileSync('ffmpeg', ['-version'], { stdio: 'ignore' });
  } catch {
    return null;
  }
  const directory = await mkdtemp(join(tmpdir(), 'media-videos-'));
  try {
    const made = [];
    for (const [extension, codec] of [['mp4', 'libx264'], ['webm', 'libvpx'], ['mkv', 'mpeg4']] as const) {
      const file = join(directory, `clip.${extension}`);
      execFileSync('ffmpeg', ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc=size=640x360:rate=10', '-t', '2', '-pix_fmt', 'yuv420p', '-c:v', codec, file]);
      made.push({ fileName: `clip.${extension}`, content: await readFile(file) });
    }
    return made;
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

const clips = await videos();

for (const driver of DRIVERS_OF_THIS_PASS) {
  t.test(`${driver}: video posters with ffmpeg`, { skip: clips ? false : 'ffmpeg is not installed (.ci/run installs Debian\'s)' }, async (t) => {
    const server = await startTestServer(t, { settings: driverSettings(driver) });
    const team = await server.createTeam('Cinema', 'enterprise');
    const ids = [];
    for (const clip of clips!) ids.push(await upload(server, team, clip.content, clip.fileName));
    const corrupt = await upload(server, team, Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), Buffer.alloc(4_000, 3)]), 'broken.mp4');
    t.ok(await settled(server.databaseUrl), 'every poster is made or marked failed');
    const rows = await thumbnailRows(server.databaseUrl);
    const listed = await records(server, team);
    for (const [index, id] of ids.entries()) {
      t.match(rows.get(id), { status: 'ready', attempts: 1 }, `${clips![index]!.fileName}: made once`);
      t.match(await fetchImage(listed.get(id)!.thumbnailUrl!), { status: 200, type: 'image/webp (webp)', width: 320, height: 180 }, `${clips![index]!.fileName}: a 320x180 poster`);
    }
    t.match(rows.get(corrupt), { status: 'failed', attempts: 1, error: /ffmpeg cannot read the video/ }, 'a video ffmpeg cannot read fails once');
  });
}

t.test('without ffmpeg, videos wait for an instance that has it; images are made', async (t) => {
  const server = await startTestServer(t, { settings: { FFMPEG_PATH: '/nonexistent/ffmpeg' } });
  const team = await server.createTeam('Projector', 'enterprise');
  const video = await upload(server, team, clips?.[0]!.content ?? Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), Buffer.alloc(64)]), 'clip.mp4');
  const image = await upload(server, team, images.png.content, 'shot.png');
  t.ok(await eventually(async () => (await thumbnailRows(server.databaseUrl)).get(image)?.status === 'ready', 30_000), 'the image gets its thumbnail');
  t.match((await thumbnailRows(server.databaseUrl)).get(video), { status: 'pending', attempts: 0 }, 'the video is not claimed');
  t.equal((await records(server, team)).get(video)!.thumbnailUrl, null);
});

async function listedUsed(server: TestServer, team: CreatedTeam): Promise<number> {
  const listed = await server.media('GET', `/v1/cdn/media/${team.teamId}?pageSize=1`, team.key);
  return listed.body.usedTeamStorage;
}

t.test('a claim left by a dead instance is taken over; two instances make each thumbnail once', async (t) => {
  const first = await startTestServer(t, { settings: { THUMBNAIL_CONCURRENCY: 0 } });
  const team = await first.createTeam('Fleet', 'enterprise');
  const ids: string[] = [];
  for (let index = 0; index < 12; index++) ids.push(await upload(first, team, await solid(200 + index, 100).png().toBuffer(), `shot-${index}.png`));
  // As an instance that died mid-thumbnail leaves it: claimed once, the claim expired.
  const pg = await connectPg(first.databaseUrl);
  await pg.query(`update media_file set thumbnail_attempts = 1, thumbnail_claim = gen_random_uuid(), thumbnail_claimed_until = now() - interval '1 second' where id = $1`, [ids[0]]);
  await pg.end();

  const makers = [
    await startTestServer(t, { databaseUrl: first.databaseUrl, dataDir: first.dataDir }),
    await startTestServer(t, { databaseUrl: first.databaseUrl, dataDir: first.dataDir }),
  ];
  t.ok(await settled(first.databaseUrl), 'the other instances make them all');
  const rows = await thumbnailRows(first.databaseUrl);
  t.match(rows.get(ids[0]!), { status: 'ready', attempts: 2 }, 'the dead instance\'s claim was taken over');
  t.same(ids.slice(1).map((id) => rows.get(id)), ids.slice(1).map(() => ({ status: 'ready', attempts: 1, error: null, location: 'fs' })), 'every other one claimed once');
  let made = 0;
  for (const maker of makers) {
    const metrics = await (await fetch(`${maker.baseUrl}/metrics`)).text();
    made += Number(/media_thumbnails_total\{outcome="made"\} (\d+)/.exec(metrics)?.[1] ?? 0);
  }
  t.equal(made, ids.length, 'made once each across the two instances');
});

t.test('an instance killed mid-thumbnail gives its claim back when it restarts, not when the claim expires', async (t) => {
  const instance = await prepareInstance(t, 'fs', 'unused/');
  const first = await startService(t, instance);
  const team = await createTeam(first.port, 'Crash');
  // 81 megapixels of one colour: a small PNG that takes sharp about a second to decode.
  const large = await solid(9000, 9000).png().toBuffer();
  for (let index = 0; index < 2; index++) t.equal(await uploadToProcess(first.port, team.teamId, team.key, large), 201);
  const claimed = async () => {
    const pg = await connectPg(instance.databaseUrl);
    try {
      return (await pg.query(`select id, thumbnail_claimed_until > now() + interval '60 seconds' as fresh from media_file
                               where thumbnail_status = 'pending' and thumbnail_claimed_by is not null`)).rows as { id: string; fresh: boolean }[];
    } finally {
      await pg.end();
    }
  };
  t.ok(await eventually(async () => (await claimed()).length > 0, 30_000), 'a thumbnail is being made');
  first.child.kill('SIGKILL');
  await first.exited;
  const held = await claimed();
  t.ok(held.length > 0 && held.every((row) => row.fresh), `the dead instance left ${held.length} claim(s), far from expiring`);

  const second = await startService(t, instance);
  t.ok(await settled(instance.databaseUrl, 30_000), 'the restarted instance makes them within seconds, not after the 2-minute claim');
  const rows = await thumbnailRows(instance.databaseUrl);
  for (const { id } of held) t.match(rows.get(id), { status: 'ready', attempts: 2 }, 'the killed attempt counts');
  t.ok(second.output.some((line) => line.includes("released the previous incarnation's thumbnail claims")), 'and it is logged');
});
