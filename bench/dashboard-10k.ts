/**
 * The dashboard with a 10,000-file team (issue 36.7): how long a browser takes from opening
 * /app/media to the first screenful of thumbnails drawn, and to the next page after scrolling.
 *
 *   node bench/dashboard-10k.ts [--files N] [--runs N]
 *
 * A service (fs) on a scratch database of BENCH_PG_URL (the bench's PostgreSQL), a team with N
 * files: N - 60 small logs first, then 60 real PNG screenshots, so that the newest page (the one
 * the grid opens on) is all images and their thumbnails are made before the browser comes. Then
 * Debian's Chromium (playwright-core) signs in with the team's key, and each run opens the media
 * view in a fresh context (no cache) and waits until every tile in the viewport shows its
 * thumbnail (the grid loads images lazily), then scrolls to the last tile for the next page.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { chromium } from 'playwright-core';
import sharp from 'sharp';
import { dropDatabase, resetDatabase, startService, thumbnailCatchUp } from './lib/service.ts';

const argument = (name: string, fallback: number) => {
  const at = process.argv.indexOf(name);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
};
const files = argument('--files', 10_000);
const runs = argument('--runs', 3);
const PAGE = 60;
const pgUrl = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dbName = 'media_bench_dashboard';

const dataDir = await mkdtemp(join(tmpdir(), 'media-bench-dashboard-'));
const databaseUrl = await resetDatabase(pgUrl, dbName);
const service = await startService({ driver: 'fs', databaseUrl, dataDir, s3: null, s3KeyPrefix: '', authSecret: 'bench-dashboard-operator-secret' });
try {
  const upload = async (content: Buffer, fileName: string) => {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(content)]), fileName);
    const answer = await fetch(`${service.origin}/v1/cdn/media/${service.teamId}/upload/file`, { method: 'POST', headers: { authorization: `Bearer ${service.apiKey}` }, body: form });
    if (answer.status !== 201) throw new Error(`upload of ${fileName}: ${answer.status} ${await answer.text()}`);
  };
  const started = performance.now();
  const logs = files - PAGE;
  for (let done = 0; done < logs; done += 32) {
    await Promise.all(Array.from({ length: Math.min(32, logs - done) }, (_, index) =>
      upload(Buffer.from(`${new Date().toISOString()} INFO line ${done + index}\n`.repeat(20)), `server-${done + index}.log`)));
  }
  for (let index = 0; index < PAGE; index++) {
    const png = await sharp({ create: { width: 1280, height: 720, channels: 3, background: { r: (index * 37) % 255, g: 90, b: 160 } } }).png().toBuffer();
    await upload(png, `shot-${index}.png`);
  }
  const catchUp = await thumbnailCatchUp(databaseUrl, service.teamId);
  console.log(`${files} files uploaded in ${((performance.now() - started) / 1000).toFixed(1)} s; thumbnails done ${catchUp.seconds?.toFixed(1)} s later`);

  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium' });
  try {
    console.log('| run | first screenful of thumbnails (ms) | next page after scrolling (ms) |');
    console.log('|---|---:|---:|');
    for (let run = 1; run <= runs; run++) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      await page.goto(`${service.origin}/app`);
      await page.getByLabel('Team id', { exact: true }).fill(service.teamId);
      await page.getByLabel('API key', { exact: true }).fill(service.apiKey);
      await page.getByRole('button', { name: 'Open the team' }).click();
      await page.getByRole('heading', { level: 1, name: 'Media' }).waitFor();
      // From here the media view is opened afresh: the time a user waits for the grid.
      await page.getByRole('link', { name: 'Upload' }).click();
      const opened = performance.now();
      await page.getByRole('link', { name: 'Media' }).click();
      // The first screenful: every tile in the viewport shows its thumbnail (the grid loads images lazily).
      await page.waitForFunction(() => {
        const document = (globalThis as any).document;
        const tiles: any[] = [...document.querySelectorAll('.media-grid .tile')];
        const visible = tiles.filter((tile) => tile.getBoundingClientRect().top < (globalThis as any).innerHeight);
        return visible.length > 0 && visible.every((tile) => {
          const image = tile.querySelector('img');
          return image && image.complete && image.naturalWidth > 0;
        });
      }, undefined, { timeout: 60_000 });
      const firstPage = performance.now() - opened;
      const scrolled = performance.now();
      await page.locator('.media-grid .tile').last().scrollIntoViewIfNeeded();
      await page.waitForFunction((count) => (globalThis as any).document.querySelectorAll('.media-grid .tile').length >= count, PAGE * 2, { timeout: 60_000 });
      const nextPage = performance.now() - scrolled;
      console.log(`| ${run} | ${firstPage.toFixed(0)} | ${nextPage.toFixed(0)} |`);
      await context.close();
    }
  } finally {
    await browser.close();
  }
} finally {
  await service.stop();
  await dropDatabase(pgUrl, dbName).catch(() => undefined);
  await rm(dataDir, { recursive: true, force: true });
}
