import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import t from 'tap';
import { PreviewProcess } from '../../src/previews/preview-process.ts';

// The preview process (issue 35.6): thumbnails made in a child process at the lowest CPU priority,
// libvips' threads included; a process that dies fails the thumbnails in hand and is replaced.

const warnings: unknown[] = [];
const previews = new PreviewProcess({ logger: { warn: (object: unknown) => void warnings.push(object) } });
t.teardown(() => previews.close());
const options = { maxSide: 320, maxPixels: 100_000_000, quality: 75 };

/** name and nice value of every thread of `pid`. */
async function threads(pid: number): Promise<{ name: string; nice: number }[]> {
  const found: { name: string; nice: number }[] = [];
  for (const tid of await readdir(`/proc/${pid}/task`)) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => null);
    if (!stat) continue;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    found.push({ name: (await readFile(`/proc/${pid}/task/${tid}/comm`, 'utf8')).trim(), nice: Number(fields[16]) });
  }
  return found;
}

t.test('thumbnails are made in a child process whose threads, libvips\' included, run at nice 19', async (t) => {
  const image = await sharp({ create: { width: 1600, height: 900, channels: 3, background: '#2a6' } }).png().toBuffer();
  const result = await previews.thumbnail({ image }, options);
  t.match(result, { kind: 'thumbnail', outcome: 'made', width: 320, height: 180 });
  const pid = previews.pid!;
  t.not(pid, process.pid, 'in a process of its own');
  const all = await threads(pid);
  t.ok(all.some((thread) => thread.name.startsWith('libvips')), `libvips threads run there (${all.map((thread) => thread.name).join(', ')})`);
  t.same(all.filter((thread) => thread.nice !== 19), [], 'every thread at nice 19');
  const main = await readFile(`/proc/${process.pid}/task/${process.pid}/stat`, 'utf8');
  t.equal(Number(main.slice(main.lastIndexOf(')') + 2).split(' ')[16]), 0, 'the service itself keeps its priority');
});

t.test('an image given by its file is read by the preview process itself; a file that is not there answers missing', async (t) => {
  const directory = await mkdtemp(join(tmpdir(), 'preview-source-'));
  t.teardown(() => rm(directory, { recursive: true, force: true }));
  const file = join(directory, 'image');
  await writeFile(file, await sharp({ create: { width: 900, height: 1600, channels: 3, background: '#26a' } }).jpeg().toBuffer());
  t.match(await previews.thumbnail({ file }, options), { outcome: 'made', width: 180, height: 320 });
  t.same(await previews.thumbnail({ file: join(directory, 'gone') }, options), { kind: 'thumbnail', outcome: 'missing' });
  t.same(await previews.thumbnail({ file: join(file, 'below-a-file') }, options), { kind: 'thumbnail', outcome: 'missing' }, 'a path through a file (ENOTDIR) too');
  await writeFile(file, 'not an image');
  t.match(await previews.thumbnail({ file }, options), { outcome: 'undecodable' }, 'a file that is not an image is undecodable, not missing');
});

t.test('a preview process that dies fails the thumbnails in hand; the next one starts another', async (t) => {
  const large = await sharp({ create: { width: 8000, height: 8000, channels: 3, background: '#a26' } }).png().toBuffer();
  const first = previews.pid!;
  const inHand = previews.thumbnail({ image: large }, options);
  process.kill(first, 'SIGKILL');
  await t.rejects(inHand, { message: /the preview process ended \(SIGKILL\)/ });
  t.match(warnings.at(-1), { signal: 'SIGKILL', thumbnails: 1 }, 'logged');
  const again = await previews.thumbnail({ image: await sharp({ create: { width: 64, height: 64, channels: 3, background: '#000' } }).png().toBuffer() }, options);
  t.match(again, { outcome: 'made', width: 64, height: 64 });
  t.not(previews.pid, first, 'made by a new process');
});

t.test('after close no thumbnail is taken and the process is gone', async (t) => {
  const pid = previews.pid!;
  await previews.close();
  await t.rejects(previews.thumbnail({ image: Buffer.from('x') }, options), { message: /closed/ });
  t.throws(() => process.kill(pid, 0), { code: 'ESRCH' }, 'the child exited');
});
