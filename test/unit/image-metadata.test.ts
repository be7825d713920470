import sharp, { type Sharp } from 'sharp';
import t from 'tap';
import { hashContent, loadXxhash } from '../../src/uploads/hashing/content-hash.ts';
import { exifOrientation } from '../../src/uploads/metadata/exif-orientation.ts';
import { MalformedImageError } from '../../src/uploads/metadata/filtered-image.ts';
import { filterImageMetadata, type StrippableType } from '../../src/uploads/metadata/image-filter.ts';
import { stripImageMetadata } from '../../src/uploads/metadata/strip-image.ts';

// Issue 35.3: the JPEG segment, PNG chunk and WebP chunk filters that leave metadata out, the EXIF
// orientation reader, and the worker's strip (sharp only to turn an image upright).

const GPS = { IFD0: { Make: 'TestCam', Model: 'Secret 1' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '48/1 8/1 0/1', GPSLongitudeRef: 'E', GPSLongitude: '11/1 34/1 0/1' } };
const XMP = '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description about="secret"/></rdf:RDF></x:xmpmeta>';
const FORMATS = { 'image/jpeg': 'jpeg', 'image/png': 'png', 'image/webp': 'webp' } as const;
const xxhash = await loadXxhash();

function encode(image: Sharp, type: StrippableType): Promise<Buffer> {
  return (type === 'image/jpeg' ? image.jpeg() : type === 'image/png' ? image.png() : image.webp({ lossless: true })).toBuffer();
}

const gradient = (width: number, height: number) => {
  const pixels = Buffer.alloc(width * height * 3);
  for (let index = 0; index < pixels.length; index++) pixels[index] = (index * 7) % 251;
  return sharp(pixels, { raw: { width, height, channels: 3 } });
};

/** An image with EXIF (GPS), XMP and the given orientation. */
function tagged(type: StrippableType, orientation = 1, width = 40, height = 20): Promise<Buffer> {
  return encode(gradient(width, height).withMetadata({ orientation }).withExifMerge(GPS).withXmp(XMP), type);
}

/** An APP13 segment holding an IPTC caption, as Photoshop writes it. */
function iptcSegment(): Buffer {
  const iptc = Buffer.concat([Buffer.from([0x1c, 0x02, 0x78, 0x00, 0x06]), Buffer.from('secret')]);
  const resource = Buffer.concat([Buffer.from('8BIM'), Buffer.from([0x04, 0x04, 0x00, 0x00]), Buffer.alloc(4), iptc, Buffer.alloc(iptc.length % 2)]);
  resource.writeUInt32BE(iptc.length, 8);
  const payload = Buffer.concat([Buffer.from('Photoshop 3.0\0'), resource]);
  const header = Buffer.from([0xff, 0xed, 0, 0]);
  header.writeUInt16BE(payload.length + 2, 2);
  return Buffer.concat([header, payload]);
}

const comment = (text: string) => {
  const header = Buffer.from([0xff, 0xfe, 0, 0]);
  header.writeUInt16BE(text.length + 2, 2);
  return Buffer.concat([header, Buffer.from(text)]);
};

async function pixels(image: Uint8Array) {
  return sharp(image).raw().toBuffer();
}

for (const type of Object.keys(FORMATS) as StrippableType[]) {
  t.test(`${type}: EXIF with GPS and XMP are left out, the pixels stay byte for byte`, async (t) => {
    const input = await tagged(type);
    const before = await sharp(input).metadata();
    t.ok(before.exif && before.xmp, 'the input carries EXIF and XMP');
    const filtered = filterImageMetadata(type, input);
    t.equal(filtered.changed, true);
    t.equal(filtered.orientation, 1);
    const after = await sharp(filtered.data).metadata();
    t.equal(after.format, FORMATS[type]);
    t.notOk(after.exif, 'no EXIF');
    t.notOk(after.xmp, 'no XMP');
    t.notOk(after.iptc, 'no IPTC');
    t.equal(after.orientation, undefined);
    t.same([after.width, after.height], [40, 20]);
    t.ok(after.icc, 'the ICC profile stays');
    t.ok(Buffer.from(filtered.data).equals(Buffer.from(filterImageMetadata(type, filtered.data).data)), 'stripping again changes nothing');
    t.equal(filterImageMetadata(type, filtered.data).changed, false);
    t.ok((await pixels(filtered.data)).equals(await pixels(input)), 'the same pixels');
    t.notOk(Buffer.from(filtered.data).includes('Secret 1'), 'no trace of the EXIF text');
    t.notOk(Buffer.from(filtered.data).includes('xmpmeta'), 'no trace of the XMP');
  });

  t.test(`${type}: an image without metadata is answered as it is`, async (t) => {
    const input = await encode(gradient(16, 16), type);
    const filtered = filterImageMetadata(type, input);
    t.equal(filtered.changed, false);
    t.equal(filtered.data, input, 'the very same buffer');
    t.equal(filtered.orientation, null);
  });

  t.test(`${type}: the EXIF orientation is read`, async (t) => {
    t.equal(filterImageMetadata(type, await tagged(type, 6)).orientation, 6);
    t.equal(filterImageMetadata(type, await tagged(type, 3)).orientation, 3);
  });

  t.test(`${type}: a truncated image is refused`, async (t) => {
    const input = await tagged(type);
    for (const length of [input.length - 3, Math.floor(input.length / 2), 30]) {
      t.throws(() => filterImageMetadata(type, input.subarray(0, length)), MalformedImageError, `cut at ${length} of ${input.length}`);
    }
    t.throws(() => filterImageMetadata(type, Buffer.from('not an image at all, just text')), MalformedImageError, 'not the format');
  });

  t.test(`${type}: bytes after the image's end go`, async (t) => {
    const input = await encode(gradient(16, 16), type);
    const filtered = filterImageMetadata(type, Buffer.concat([input, Buffer.from('trailing secret')]));
    t.equal(filtered.changed, true);
    t.ok(Buffer.from(filtered.data).equals(input));
  });
}

t.test('jpeg: IPTC (APP13), comments and APPn other than JFIF, ICC and Adobe are left out', async (t) => {
  const plain = await gradient(24, 24).jpeg().toBuffer();
  // After SOI: an IPTC segment, a comment, an APP3 of some program.
  const app3 = Buffer.from([0xff, 0xe3, 0x00, 0x08, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66]);
  const input = Buffer.concat([plain.subarray(0, 2), iptcSegment(), comment('secret comment'), app3, plain.subarray(2)]);
  t.ok((await sharp(input).metadata()).iptc, 'sharp sees the IPTC');
  const filtered = filterImageMetadata('image/jpeg', input);
  t.ok(Buffer.from(filtered.data).equals(plain), 'exactly the image without them');
  t.notOk((await sharp(filtered.data).metadata()).iptc);
});

t.test('jpeg: entropy-coded data with stuffed bytes and restart markers is followed to the end', async (t) => {
  // Restart intervals put RSTn markers inside the scan; progressive JPEGs have many scans.
  for (const options of [{ progressive: true }, { quality: 100 }, { optimiseScans: true, progressive: true }]) {
    const input = Buffer.concat([(await tagged('image/jpeg')).subarray(0, 2), comment('x'), (await gradient(300, 200).jpeg(options).toBuffer()).subarray(2)]);
    const filtered = filterImageMetadata('image/jpeg', input);
    t.ok((await pixels(filtered.data)).equals(await pixels(input)), JSON.stringify(options));
  }
});

t.test('jpeg: markers that cannot be where they are are refused', async (t) => {
  const plain = await gradient(16, 16).jpeg().toBuffer();
  t.throws(() => filterImageMetadata('image/jpeg', Buffer.concat([plain.subarray(0, 2), Buffer.from([0x12, 0x34]), plain.subarray(2)])), MalformedImageError, 'no marker');
  t.throws(() => filterImageMetadata('image/jpeg', Buffer.concat([plain.subarray(0, 2), Buffer.from([0xff, 0xd8]), plain.subarray(2)])), MalformedImageError, 'a second SOI');
  t.throws(() => filterImageMetadata('image/jpeg', Buffer.concat([plain.subarray(0, 2), Buffer.from([0xff, 0xe1, 0x00, 0x01]), plain.subarray(2)])), MalformedImageError, 'a length below 2');
});

t.test('png: text chunks, tIME and unknown ancillary chunks go; an unknown critical chunk is refused', async (t) => {
  const plain = await gradient(16, 16).png().toBuffer();
  const chunk = (type: string, data: Buffer) => {
    const header = Buffer.alloc(8);
    header.writeUInt32BE(data.length, 0);
    header.write(type, 4, 'latin1');
    return Buffer.concat([header, data, Buffer.alloc(4)]);
  };
  const ihdrEnd = 8 + 25;
  const withText = Buffer.concat([
    plain.subarray(0, ihdrEnd), chunk('tEXt', Buffer.from('Author\0secret')), chunk('zTXt', Buffer.from('c\0\0x')), chunk('tIME', Buffer.alloc(7)),
    chunk('prVt', Buffer.from('private')), plain.subarray(ihdrEnd),
  ]);
  const filtered = filterImageMetadata('image/png', withText);
  t.ok(Buffer.from(filtered.data).equals(plain), 'exactly the image without them');
  const critical = Buffer.concat([plain.subarray(0, ihdrEnd), chunk('ABCD', Buffer.alloc(1)), plain.subarray(ihdrEnd)]);
  t.throws(() => filterImageMetadata('image/png', critical), MalformedImageError);
  const badType = Buffer.concat([plain.subarray(0, ihdrEnd), chunk('a1b2', Buffer.alloc(1)), plain.subarray(ihdrEnd)]);
  t.throws(() => filterImageMetadata('image/png', badType), MalformedImageError);
});

t.test('webp: the VP8X flags of EXIF and XMP are cleared and the RIFF size written anew', async (t) => {
  const input = await tagged('image/webp');
  t.equal(input[20]! & 0x0c, 0x0c, 'the input announces EXIF and XMP');
  const data = Buffer.from(filterImageMetadata('image/webp', input).data);
  t.equal(data[20]! & 0x0c, 0, 'flags cleared');
  t.equal(data.readUInt32LE(4), data.length - 8, 'RIFF size');
  t.notOk(data.includes('EXIF') || data.includes('XMP '));
});

t.test('exifOrientation reads both byte orders and ignores what it cannot read', async (t) => {
  const tiff = (little: boolean, orientation: number, type = 3) => {
    const bytes = Buffer.alloc(26);
    const u16 = (value: number, at: number) => (little ? bytes.writeUInt16LE(value, at) : bytes.writeUInt16BE(value, at));
    bytes.write(little ? 'II' : 'MM', 0, 'latin1');
    u16(42, 2);
    little ? bytes.writeUInt32LE(8, 4) : bytes.writeUInt32BE(8, 4);
    u16(1, 8);
    u16(0x0112, 10);
    u16(type, 12);
    little ? bytes.writeUInt32LE(1, 14) : bytes.writeUInt32BE(1, 14);
    u16(orientation, 18);
    return bytes;
  };
  t.equal(exifOrientation(tiff(true, 6)), 6);
  t.equal(exifOrientation(tiff(false, 8)), 8);
  t.equal(exifOrientation(Buffer.concat([Buffer.from('Exif\0\0'), tiff(false, 3)])), 3);
  t.equal(exifOrientation(tiff(true, 9)), null, 'out of range');
  t.equal(exifOrientation(tiff(true, 6, 4)), null, 'not a SHORT');
  t.equal(exifOrientation(tiff(true, 6).subarray(0, 20)), null, 'cut short');
  t.equal(exifOrientation(Buffer.from('XX*\0\0\0\0\x08')), null, 'no byte order');
});

for (const type of Object.keys(FORMATS) as StrippableType[]) {
  t.test(`${type}: the worker turns an image with orientation 6 upright, then drops it`, async (t) => {
    const input = await tagged(type, 6, 40, 20);
    const result = await stripImageMetadata({ kind: 'stripMetadata', image: new Uint8Array(input).buffer, contentType: type, maxPixels: 1_000_000 }, xxhash);
    if (result.outcome !== 'stripped') throw new Error(`not stripped: ${JSON.stringify(result)}`);
    t.equal(result.reencoded, true);
    const data = new Uint8Array(result.data);
    t.equal(result.hash, hashContent(xxhash, data));
    const after = await sharp(data).metadata();
    t.same([after.format, after.width, after.height], [FORMATS[type], 20, 40], 'upright: the sides swapped');
    t.equal(after.orientation, undefined);
    t.notOk(after.exif || after.xmp || after.iptc);
    if (type !== 'image/jpeg') {
      const upright = await sharp(input).autoOrient().raw().toBuffer();
      t.ok((await pixels(data)).equals(upright), 'losslessly');
    }
  });
}

t.test('the worker: no metadata is unchanged, metadata without orientation is filtered, damage and bombs are refused', async (t) => {
  const run = (image: Buffer, contentType: StrippableType = 'image/jpeg', maxPixels = 1_000_000) =>
    stripImageMetadata({ kind: 'stripMetadata', image: new Uint8Array(image).buffer, contentType, maxPixels }, xxhash);
  t.same(await run(await gradient(8, 8).jpeg().toBuffer()), { kind: 'stripMetadata', outcome: 'unchanged' });
  const filtered = await run(await tagged('image/png'), 'image/png');
  t.match(filtered, { outcome: 'stripped', reencoded: false });
  const truncated = (await tagged('image/jpeg')).subarray(0, 300);
  t.match(await run(truncated), { outcome: 'refused', reason: /ends before/ });
  t.match(await run(await tagged('image/png', 6, 200, 100), 'image/png', 10_000), { outcome: 'refused', reason: /cannot be decoded/ }, 'too many pixels to turn');
  // Damaged pixels in a well-formed PNG: only decoding tells, and an image turned upright is decoded.
  const png = await tagged('image/png', 6);
  const idat = png.indexOf('IDAT');
  const damaged = Buffer.from(png);
  damaged.fill(0x55, idat + 6, idat + 20);
  t.match(await run(damaged, 'image/png'), { outcome: 'refused', reason: /cannot be decoded/ });
  // An APNG (an acTL chunk after IHDR) turned by EXIF: its frames cannot be turned here.
  const turned = await tagged('image/png', 6);
  const actl = Buffer.from([0, 0, 0, 8, 0x61, 0x63, 0x54, 0x4c, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
  const animated = Buffer.concat([turned.subarray(0, 33), actl, turned.subarray(33)]);
  t.match(await run(animated, 'image/png'), { outcome: 'refused', reason: /animated/ });
});
