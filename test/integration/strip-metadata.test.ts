import sharp, { type Sharp } from 'sharp';
import t, { type Test } from 'tap';
import { hashContent, loadXxhash } from '../../src/uploads/hashing/content-hash.ts';
import { startTestServer, expectError, type CreatedTeam, type TestServer } from '../helpers/server.ts';
import { closeS3Client, DRIVERS_OF_THIS_PASS, driverSettings, settledObjects } from '../helpers/storage.ts';
import { expectNothingCounted, teamStorageState, uploadJson, uploadMultipart } from '../helpers/uploads.ts';
import { createUploadUrl, postFormToUrl } from '../helpers/upload-urls.ts';
import { tusMetadata, tusRequest, tusUpload } from '../helpers/tus.ts';

// Issue 35.3: stripMetadata removes EXIF (with GPS), XMP and IPTC from JPEG, PNG and WebP before
// the file is stored, turning it upright first; the stored size, hash and counted storage are the
// stripped file's. On fs and s3, through multipart, JSON and an upload URL; the team setting as
// the default and the option overriding it; other types untouched; a damaged image and one above
// STRIP_METADATA_MAX_MIB refused with nothing left behind.

t.teardown(closeS3Client);

const xxhash = await loadXxhash();
const GPS = { IFD0: { Make: 'TestCam', Model: 'Secret 1' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '48/1 8/1 0/1', GPSLongitudeRef: 'E', GPSLongitude: '11/1 34/1 0/1' } };
const XMP = '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description about="secret"/></rdf:RDF></x:xmpmeta>';

const solid = (width: number, height: number): Sharp => sharp({ create: { width, height, channels: 3, background: { r: 200, g: 90, b: 30 } } });
const tagged = (image: Sharp, orientation = 1) => image.withMetadata({ orientation }).withExifMerge(GPS).withXmp(XMP);

const images = {
  // 600x300 turned by EXIF orientation 6: stored upright, 300x600.
  jpeg: { content: await tagged(solid(600, 300), 6).jpeg().toBuffer(), fileName: 'phone.jpg', format: 'jpeg', upright: [300, 600] },
  png: { content: await tagged(solid(320, 200)).png().toBuffer(), fileName: 'screen.png', format: 'png', upright: [320, 200] },
  webp: { content: await tagged(solid(200, 100)).webp().toBuffer(), fileName: 'map.webp', format: 'webp', upright: [200, 100] },
} as const;

/** A JPEG of noise above 1 MiB (STRIP_METADATA_MAX_MIB in these tests). */
async function largeJpeg(): Promise<Buffer> {
  const pixels = Buffer.alloc(900 * 900 * 3);
  for (let index = 0; index < pixels.length; index++) pixels[index] = (index * 2_654_435_761) >>> 24;
  return tagged(sharp(pixels, { raw: { width: 900, height: 900, channels: 3 } })).jpeg({ quality: 100 }).toBuffer();
}

interface Uploaded {
  id: string;
  size: number;
  hash: string;
  publicUrl: string;
}

async function expectUploaded(response: { status: number; body: any }, label: string): Promise<Uploaded> {
  if (response.status !== 201) throw new Error(`${label}: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

/** The bytes served back and what sharp reads of them. */
async function servedBack(uploaded: Uploaded) {
  const response = await fetch(uploaded.publicUrl);
  const bytes = Buffer.from(await response.arrayBuffer());
  const metadata = await sharp(bytes).metadata();
  return { bytes, metadata };
}

/** The served file is the stored one (size and hash of the answer), and carries no metadata. */
async function expectStripped(t: Test, uploaded: Uploaded, image: { format: string; upright: readonly number[] }, label: string): Promise<void> {
  const { bytes, metadata } = await servedBack(uploaded);
  t.equal(bytes.length, uploaded.size, `${label}: the stored size is the served bytes'`);
  t.equal(hashContent(xxhash, bytes), uploaded.hash, `${label}: the stored hash is the served bytes'`);
  t.equal(metadata.format, image.format, `${label}: still a ${image.format}`);
  t.same([metadata.width, metadata.height], image.upright, `${label}: upright`);
  t.equal(metadata.orientation, undefined, `${label}: no orientation`);
  t.notOk(metadata.exif, `${label}: no EXIF (no GPS)`);
  t.notOk(metadata.xmp, `${label}: no XMP`);
  t.notOk(metadata.iptc, `${label}: no IPTC`);
  t.notOk(bytes.includes('Secret 1'), `${label}: no trace of the camera`);
}

async function expectKept(t: Test, uploaded: Uploaded, content: Buffer, label: string): Promise<void> {
  const { bytes, metadata } = await servedBack(uploaded);
  t.ok(bytes.equals(content), `${label}: stored as sent`);
  t.equal(uploaded.hash, hashContent(xxhash, content));
  t.ok(metadata.exif, `${label}: the EXIF stays`);
}

async function setTeamDefault(server: TestServer, team: CreatedTeam, stripMetadata: boolean): Promise<void> {
  const response = await server.media('PATCH', `/v1/teams/${team.teamId}`, team.key, { body: { stripMetadata } });
  t.equal(response.status, 200);
  t.equal(response.body.stripMetadata, stripMetadata, 'the team answers its setting');
}

for (const driver of DRIVERS_OF_THIS_PASS) {
  t.test(`${driver}: metadata stripped through every route, the team's default, refusals leaving nothing`, async (t) => {
    const server = await startTestServer(t, { settings: { ...driverSettings(driver), STRIP_METADATA_MAX_MIB: 1 } });
    const team = await server.createTeam('Privacy', 'enterprise');
    const sizes: number[] = [];
    const note = (uploaded: Uploaded) => (sizes.push(uploaded.size), uploaded);

    for (const [kind, image] of Object.entries(images)) {
      const uploaded = note(await expectUploaded(await uploadMultipart(server, team.teamId, team.key, image, 'stripMetadata=true'), kind));
      t.ok(uploaded.size < image.content.length, `${kind}: smaller than sent`);
      await expectStripped(t, uploaded, image, `${kind} (multipart)`);
    }
    const json = note(await expectUploaded(await uploadJson(server, team.teamId, team.key, {
      file: images.jpeg.content.toString('base64'), fileName: 'json.jpg', public: true, stripMetadata: true,
    }), 'json'));
    await expectStripped(t, json, images.jpeg, 'jpeg (JSON, the option after the file)');
    const url = await createUploadUrl(server, team.teamId, team.key, { stripMetadata: true, public: true });
    const viaUrl = note(await expectUploaded(await postFormToUrl(url.url, [{ content: images.webp.content, fileName: images.webp.fileName, field: 'file' }]), 'upload URL'));
    await expectStripped(t, viaUrl, images.webp, 'webp (upload URL)');

    // tus: stripped once its last byte arrived, before its commit.
    const tus = await tusUpload(server, team.teamId, team.key, images.jpeg.content, {
      metadata: { filename: 'resumed.jpg', filetype: 'image/jpeg', public: 'true', stripMetadata: 'true' },
    }).done;
    const listed = await server.media('GET', `/v1/cdn/media/${team.teamId}?pageSize=100`, team.key);
    const viaTus = note(listed.body.media.find((record: { id: string }) => record.id === tus.mediaId));
    await expectStripped(t, viaTus, images.jpeg, 'jpeg (tus)');

    // Not asked: stored as sent. Not an image: stored as sent, whatever is asked.
    await expectKept(t, note(await expectUploaded(await uploadMultipart(server, team.teamId, team.key, images.png, 'public=true'), 'unasked')), images.png.content, 'not asked');
    const text = Buffer.from('Exif\0\0 is only text here\n');
    const textUploaded = note(await expectUploaded(await uploadMultipart(server, team.teamId, team.key, { content: text, fileName: 'notes.txt' }, 'stripMetadata=true'), 'text'));
    t.same([textUploaded.size, textUploaded.hash], [text.length, hashContent(xxhash, text)], 'a text file is stored as sent');

    // The team's default: on, an upload that says nothing is stripped; stripMetadata=false keeps it.
    await setTeamDefault(server, team, true);
    t.equal((await server.media('GET', `/v1/teams/${team.teamId}`, team.key)).body.stripMetadata, true);
    await expectStripped(t, note(await expectUploaded(await uploadMultipart(server, team.teamId, team.key, images.jpeg, ''), 'default on')), images.jpeg, 'team default on');
    await expectStripped(t, note(await expectUploaded(await uploadJson(server, team.teamId, team.key, {
      file: images.png.content.toString('base64'), fileName: 'default.png', public: true,
    }), 'default on, JSON')), images.png, 'team default on (JSON)');
    await expectKept(t, note(await expectUploaded(await uploadMultipart(server, team.teamId, team.key, images.jpeg, 'stripMetadata=false'), 'override off')), images.jpeg.content, 'the option overrides the team default');
    await setTeamDefault(server, team, false);
    await expectKept(t, note(await expectUploaded(await uploadMultipart(server, team.teamId, team.key, images.webp, ''), 'default off')), images.webp.content, 'team default off again');

    // The quota counts the stored bytes: the stripped sizes.
    const state = await teamStorageState(server.databaseUrl, team.teamId);
    const total = sizes.reduce((sum, size) => sum + size, 0);
    t.match(state, { files: sizes.length, sumOfSizes: total, usedStorage: total, reservedStorage: 0, reservations: 0 }, 'used storage is the sum of the stored sizes');

    // Refusals: nothing stored, nothing counted.
    const before = { files: state.files, usedStorage: state.usedStorage };
    const cut = images.jpeg.content.subarray(0, images.jpeg.content.length - 40);
    const damaged = await uploadMultipart(server, team.teamId, team.key, { content: cut, fileName: 'cut.jpg' }, 'stripMetadata=true');
    expectError(t, damaged, 422, 'error.media.stripMetadataFailed');
    t.match(damaged.body.message, /ends before its end marker/);
    const damagedJson = await uploadJson(server, team.teamId, team.key, { file: cut.toString('base64'), fileName: 'cut.jpg', stripMetadata: true });
    expectError(t, damagedJson, 422, 'error.media.stripMetadataFailed');
    const large = await largeJpeg();
    t.ok(large.length > 1024 * 1024, 'the large image is above the limit');
    const tooLarge = await uploadMultipart(server, team.teamId, team.key, { content: large, fileName: 'large.jpg' }, 'stripMetadata=true');
    expectError(t, tooLarge, 413, 'error.media.stripMetadataTooLarge');
    t.equal(tooLarge.body.value, 1024 * 1024);
    expectError(t, await uploadMultipart(server, team.teamId, team.key, images.jpeg, 'stripMetadata=yes'), 400, 'error.badRequest');
    expectError(t, await uploadJson(server, team.teamId, team.key, { file: images.jpeg.content.toString('base64'), fileName: 'a.jpg', stripMetadata: 'yes' }), 400, 'error.badRequest');
    expectError(t, await server.media('PATCH', `/v1/teams/${team.teamId}`, team.key, { body: { stripMetadata: 'yes' } }), 400, 'error.badRequest');
    // A damaged image by tus: its last PATCH is refused and the upload is gone.
    const created = await tusRequest(server, 'POST', `/v1/cdn/media/${team.teamId}/tus`, team.key, {
      'upload-length': String(cut.length), 'upload-metadata': tusMetadata({ filename: 'cut.jpg', stripMetadata: 'true' }),
    });
    t.equal(created.status, 201);
    const patched = await tusRequest(server, 'PATCH', new URL(created.headers.get('location')!, server.baseUrl).pathname, team.key, {
      'upload-offset': '0', 'content-type': 'application/offset+octet-stream',
    }, cut);
    expectError(t, patched, 422, 'error.media.stripMetadataFailed');
    await expectNothingCounted(t, server, team.teamId, before);
    const stored = await settledObjects(driver, server.dataDir, team.teamId, sizes.length);
    t.same([stored.objects.length, stored.inProgress], [sizes.length, []], 'no object left by a refusal');
    // Without the option, the damaged and the large image are stored as they are (the checks are stripMetadata's).
    t.equal((await uploadMultipart(server, team.teamId, team.key, { content: large, fileName: 'large.jpg' }, '')).status, 201);
  });
}
