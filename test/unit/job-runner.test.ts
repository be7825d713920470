import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { JobRunner } from '../../src/jobs/job-runner.ts';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

t.test('every: never two runs at once, failures to onError, stop() waits for the run in progress', async (t) => {
  let running = 0;
  let most = 0;
  let runs = 0;
  const release = deferred();
  const errors: unknown[] = [];
  const runner = new JobRunner(
    { name: 'test-every', schedule: { everyMs: 10, atStart: true } },
    {
      work: async () => {
        runs++;
        running++;
        most = Math.max(most, running);
        if (runs === 1) await release.promise;
        running--;
        if (runs === 2) throw new Error('boom');
      },
      onError: (error) => void errors.push(error),
    },
  );
  runner.start();
  await sleep(60);
  t.equal(runs, 1, 'the ticks during the first run are skipped');
  release.resolve();
  for (let i = 0; i < 50 && errors.length === 0; i++) await sleep(10);
  t.match(errors[0], { message: 'boom' }, 'a failure goes to onError');
  await runner.stop();
  const after = runs;
  await sleep(50);
  t.equal(runs, after, 'nothing runs after stop()');
  t.equal(most, 1, 'never two at once');
});

t.test('stop() waits for a timer run in progress', async (t) => {
  const release = deferred();
  let finished = false;
  const runner = new JobRunner(
    { name: 'test-stop', schedule: { everyMs: 1000, atStart: true } },
    { work: () => release.promise.then(() => void (finished = true)), onError: () => undefined },
  );
  runner.start();
  const stopped = runner.stop().then(() => finished);
  await sleep(20);
  release.resolve();
  t.equal(await stopped, true);
});

t.test('pause: the next run comes the asked pause after the previous one ended', async (t) => {
  const starts: number[] = [];
  const runner = new JobRunner(
    { name: 'test-pause', schedule: { pauseMs: () => 30 } },
    {
      work: async () => {
        starts.push(Date.now());
        await sleep(40);
      },
      onError: () => undefined,
    },
  );
  runner.start();
  for (let i = 0; i < 100 && starts.length < 3; i++) await sleep(10);
  await runner.stop();
  t.ok(starts.length >= 3);
  t.ok(starts[2]! - starts[1]! >= 65, `runs ${starts[2]! - starts[1]!} ms apart: the run's 40 ms, then the pause of 30 ms`);
});

t.test('aligned: fires a little after the interval boundary', async (t) => {
  const fired: number[] = [];
  const runner = new JobRunner(
    { name: 'test-aligned', schedule: { alignedMs: 1000, delayMs: 50 } },
    { work: async () => void fired.push(Date.now()), onError: () => undefined },
  );
  runner.start();
  for (let i = 0; i < 300 && fired.length < 1; i++) await sleep(10);
  await runner.stop();
  t.ok(fired[0]! % 1000 >= 45, `fired ${fired[0]! % 1000} ms after a second's boundary`);
});

t.test('a once-across-instances job needs the orm', async (t) => {
  t.throws(
    () => new JobRunner({ name: 'test-once', schedule: { everyMs: 10 }, once: { lockKey: 1, unit: 'minute' } }, { work: async () => 0, onError: () => undefined }),
    /needs the orm/,
  );
});

t.test('runOnce() of an every-instance job runs its work with no slot', async (t) => {
  const runner = new JobRunner({ name: 'test-run-once', schedule: { everyMs: 1000 } }, { work: async (now, slot) => ({ now, slot }), onError: () => undefined });
  const now = new Date(0);
  t.same(await runner.runOnce(now), { ran: true, slot: null, result: { now, slot: null } });
});
