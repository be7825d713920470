/**
 * Thumbnails per second per core: the preview process the service makes its thumbnails in
 * (src/previews/preview-process.ts) on screenshot-like images, one image at a time, so the CPU a
 * thumbnail costs is that process's CPU (from /proc) over the count.
 *
 *   node bench/thumbnails.ts [--count N]
 *
 * Images: PNG screenshots of 1280x720 and 1920x1080 (a gradient with noise, compressed as a game
 * screenshot is, about 0.3-2 MiB), a 1920x1080 JPEG, and a 1024x1024 WebP.
 */
import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import sharp, { type Sharp } from 'sharp';
import { PreviewProcess } from '../src/previews/preview-process.ts';

const countArg = process.argv.indexOf('--count');
const count = countArg >= 0 ? Number(process.argv[countArg + 1]) : 40;

async function screenshot(width: number, height: number): Promise<Sharp> {
  const pixels = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const at = (y * width + x) * 3;
      const noise = (x * 7919 + y * 104729) % 23;
      pixels[at] = (x * 255) / width + noise;
      pixels[at + 1] = (y * 255) / height + noise;
      pixels[at + 2] = ((x + y) * 127) / (width + height) + noise;
    }
  }
  return sharp(pixels, { raw: { width, height, channels: 3 } });
}

const images = [
  { name: 'PNG 1280x720', data: await (await screenshot(1280, 720)).png().toBuffer() },
  { name: 'PNG 1920x1080', data: await (await screenshot(1920, 1080)).png().toBuffer() },
  { name: 'JPEG 1920x1080', data: await (await screenshot(1920, 1080)).jpeg({ quality: 85 }).toBuffer() },
  { name: 'WebP 1024x1024', data: await (await screenshot(1024, 1024)).webp().toBuffer() },
];

/** CPU seconds (user and system) the process `pid` has used so far. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (100 per second on Linux)
}

const options = { maxSide: 320, maxPixels: 100_000_000, quality: 75 };
const previews = new PreviewProcess({ logger: console });
await previews.thumbnail({ image: images[0]!.data }, options); // starts the process and loads sharp there
console.log('| image | bytes | thumbnails/s (one core) | CPU ms per thumbnail |');
console.log('|---|---:|---:|---:|');
for (const image of images) {
  const cpuBefore = await cpuSeconds(previews.pid!);
  const started = performance.now();
  for (let index = 0; index < count; index++) {
    const result = await previews.thumbnail({ image: image.data }, options);
    if (result.outcome !== 'made') throw new Error(`${image.name}: ${result.outcome === 'undecodable' ? result.reason : result.outcome}`);
  }
  const seconds = (performance.now() - started) / 1000;
  const cpuMs = ((await cpuSeconds(previews.pid!)) - cpuBefore) * 1000 / count;
  console.log(`| ${image.name} | ${image.data.length} | ${(count / seconds).toFixed(1)} | ${cpuMs.toFixed(1)} |`);
}
await previews.close();
