import t from 'tap';
import { AdmissionGate } from '../../src/uploads/admission/admission-gate.ts';
import { ServiceError } from '../../src/errors/service-error.ts';

const options = { concurrency: 2, queueLimit: 2, retryAfterSeconds: 3, teamMaxShare: 1 };
const flush = () => new Promise((resolve) => setImmediate(resolve));

t.test('runs at once while a slot is free; then waits first come first served, each release handing its slot on', async (t) => {
  const gate = new AdmissionGate(options);
  const first = await gate.admit('a');
  const second = await gate.admit('b');
  t.equal(gate.running, 2);
  const order: string[] = [];
  const third = gate.admit('c').then((release) => (order.push('c'), release));
  const fourth = gate.admit('d').then((release) => (order.push('d'), release));
  await flush();
  t.equal(gate.waiting, 2);
  t.same(order, []);
  second();
  second(); // a second call does nothing
  await flush();
  t.same(order, ['c']);
  t.equal(gate.running, 2, 'the slot passed on');
  first();
  (await third)();
  (await fourth)();
  t.equal(gate.running, 0);
  t.equal(gate.waiting, 0);
  t.equal(gate.heldBy('a') + gate.heldBy('c') + gate.heldBy('d'), 0, 'every place given back');
});

t.test('a full waiting room, and a team past its share, are refused at once with 503 uploadBusy', async (t) => {
  const gate = new AdmissionGate(options);
  const running = [await gate.admit('a'), await gate.admit('b')];
  const waiting = [gate.admit('c'), gate.admit('d')];
  const refused = await gate.admit('e').catch((error: unknown) => error);
  t.ok(refused instanceof ServiceError);
  t.match(refused, { status: 503 });
  t.match(gate.refusal('e'), { status: 503 }, 'refusal() tells the same without taking anything');
  running.forEach((release) => release());
  (await Promise.all(waiting)).forEach((release) => release());

  const shared = new AdmissionGate({ ...options, teamMaxShare: 0.5 });
  const mine = [await shared.admit('team'), await shared.admit('team')];
  t.match(await shared.admit('team').catch((error: unknown) => error), { status: 503, message: /share/ }, 'past its two places');
  const other = shared.admit('other');
  t.equal(shared.waiting, 1, 'another team still gets in line');
  mine[0]!();
  (await other)();
  mine[1]!();
  t.equal(shared.running, 0);
});

t.test('an upload whose client leaves while it waits leaves the queue and gives its place back; close refuses the waiting ones', async (t) => {
  const gate = new AdmissionGate(options);
  const running = [await gate.admit('a'), await gate.admit('b')];
  const gone = new AbortController();
  const leaving = gate.admit('c', gone.signal).catch((error: unknown) => error);
  const staying = gate.admit('d');
  await flush();
  gone.abort(new Error('client left'));
  t.match(await leaving, { message: 'client left' });
  t.equal(gate.waiting, 1);
  t.equal(gate.heldBy('c'), 0);
  running[0]!();
  const release = await staying;
  t.equal(gate.heldBy('d'), 1, 'the next one in line got the slot');

  const late = gate.admit('e').catch((error: unknown) => error);
  gate.close();
  t.match(await late, { status: 503 }, 'waiting when the gate closed: 503');
  t.match(await gate.admit('f').catch((error: unknown) => error), { status: 503 }, 'closed: refused');
  const idle = gate.idle();
  let settled = false;
  void idle.then(() => (settled = true));
  await flush();
  t.notOk(settled, 'idle waits for the running ones');
  release();
  running[1]!();
  await idle;
  t.pass('idle once every slot is released');
});

t.test('an already aborted signal is refused with its reason, taking nothing', async (t) => {
  const gate = new AdmissionGate(options);
  t.match(await gate.admit('a', AbortSignal.abort(new Error('gone'))).catch((error: unknown) => error), { message: 'gone' });
  t.equal(gate.heldBy('a'), 0);
  t.equal(gate.running, 0);
});
