import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { DirectorySyncer, fsyncDirectory } from '../../src/storage/fs/directory-syncer.ts';

/** The real fsync, recording when each one started and ended (process.hrtime, ns). */
function watchedFsync() {
  const calls: { dir: string; started: bigint; ended: bigint }[] = [];
  const fsync = async (dir: string) => {
    const started = process.hrtime.bigint();
    await fsyncDirectory(dir);
    calls.push({ dir, started, ended: process.hrtime.bigint() });
  };
  return { calls, fsync };
}

t.test('directory syncer', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'directory-syncer-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));

  t.test('callers arriving while an fsync runs share the next one', async (t) => {
    const { calls, fsync } = watchedFsync();
    const syncer = new DirectorySyncer(fsync);
    const arrivals: bigint[] = [];
    const done: bigint[] = [];
    const waiters = Array.from({ length: 20 }, () => {
      arrivals.push(process.hrtime.bigint());
      return syncer.sync(root).then(() => void done.push(process.hrtime.bigint()));
    });
    await Promise.all(waiters);
    t.equal(calls.length, 2, 'one fsync for the first caller, one shared by the 19 that came while it ran');
    // Every caller after the first is covered by an fsync that started after it called.
    t.ok(calls[1]!.started > arrivals[19]!, 'the shared fsync started after the last caller arrived');
    t.equal(done.length, 20);
  });

  t.test('calls one after another each get their own fsync', async (t) => {
    const { calls, fsync } = watchedFsync();
    const syncer = new DirectorySyncer(fsync);
    for (let i = 0; i < 3; i++) await syncer.sync(root);
    t.equal(calls.length, 3);
  });

  t.test('different directories do not share', async (t) => {
    const { calls, fsync } = watchedFsync();
    const syncer = new DirectorySyncer(fsync);
    await Promise.all([syncer.sync(root), syncer.sync(tmpdir())]);
    t.same(calls.map((call) => call.dir).sort(), [root, tmpdir()].sort());
  });

  t.test('a failing fsync fails its callers and the next caller tries again', async (t) => {
    const syncer = new DirectorySyncer();
    const missing = join(root, 'missing');
    const results = await Promise.allSettled([syncer.sync(missing), syncer.sync(missing)]);
    t.same(results.map((result) => result.status), ['rejected', 'rejected']);
    t.equal((results[0] as PromiseRejectedResult).reason.code, 'ENOENT');
    await t.resolves(syncer.sync(root));
  });
});
