/**
 * The cost of metadata stripping (src/uploads/metadata): the pool's stripMetadata task, the one the
 * service runs, on camera-like photos with EXIF (GPS) and XMP, one pool thread, one image at a
 * time, so the CPU a strip costs is the process's CPU over the count. Orientation 1 is the segment
 * or chunk filter alone; orientation 6 decodes, turns and re-encodes with sharp. The service also
 * reads the image back from storage and writes it again (not measured here).
 *
 *   node bench/strip-metadata.ts [--count N]
 */
import { performance } from 'node:perf_hooks';
import sharp from 'sharp';
import { MediaPool } from '../src/pool/media-pool.ts';
import type { StrippableType } from '../src/uploads/metadata/image-filter.ts';

const countArg = process.argv.indexOf('--count');
const count = countArg >= 0 ? Number(process.argv[countArg + 1]) : 20;
const GPS = { IFD0: { Make: 'BenchCam' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '48/1 8/1 0/1', GPSLongitudeRef: 'E', GPSLongitude: '11/1 34/1 0/1' } };

function photo(width: number, height: number, orientation: number) {
  const pixels = Buffer.alloc(width * height * 3);
  for (let at = 0; at < pixels.length; at++) pixels[at] = ((at % (width * 3)) * 255) / (width * 3) + ((at * 2_654_435_761) >>> 28);
  return sharp(pixels, { raw: { width, height, channels: 3 } }).withMetadata({ orientation }).withExifMerge(GPS).withXmp('<x:xmpmeta xmlns:x="adobe:ns:meta/"/>');
}

const cases: { name: string; type: StrippableType; data: Buffer }[] = [];
for (const orientation of [1, 6]) {
  cases.push({ name: `JPEG 4032x3024, orientation ${orientation}`, type: 'image/jpeg', data: await photo(4032, 3024, orientation).jpeg({ quality: 90 }).toBuffer() });
  cases.push({ name: `PNG 1920x1080, orientation ${orientation}`, type: 'image/png', data: await photo(1920, 1080, orientation).png().toBuffer() });
  cases.push({ name: `WebP 1920x1080, orientation ${orientation}`, type: 'image/webp', data: await photo(1920, 1080, orientation).webp().toBuffer() });
}

const pool = new MediaPool({ threads: 1 });
await pool.stripMetadata(Buffer.from(cases[1]!.data), { contentType: 'image/png', maxPixels: 100_000_000 }); // loads sharp in the thread
console.log('| image | bytes | stored bytes | strips/s (one core) | CPU ms per strip |');
console.log('|---|---:|---:|---:|---:|');
for (const image of cases) {
  let stored = 0;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  for (let index = 0; index < count; index++) {
    // A copy each time: the pool transfers (detaches) the buffer it is given.
    const result = await pool.stripMetadata(Buffer.from(image.data), { contentType: image.type, maxPixels: 100_000_000 });
    if (result.outcome !== 'stripped') throw new Error(`${image.name}: ${JSON.stringify(result)}`);
    stored = result.data.byteLength;
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  console.log(`| ${image.name} | ${image.data.length} | ${stored} | ${(count / seconds).toFixed(1)} | ${((cpu.user + cpu.system) / 1000 / count).toFixed(1)} |`);
}
await pool.close();
