import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ServiceError } from '../../src/errors/service-error.ts';
import { ClientAbortedError, RequestBody } from '../../src/http/request-body.ts';
import type { BodyConsumer, BodySource } from '../../src/http/request-body.ts';
import { MemoryBudget } from '../../src/http/memory-budget.ts';
import { eventually } from '../helpers/wait.ts';

/** A transport stub: records pause()/resume() in one shared log, in call order. */
class FakeSource implements BodySource {
  readonly log: string[];
  constructor(log: string[] = []) {
    this.log = log;
  }
  pause(): void {
    this.log.push('pause');
  }
  resume(): void {
    this.log.push('resume');
  }
}

/** A consumer that writes what it receives into the same log as the source. */
function recorder(log: string[]): BodyConsumer {
  return {
    chunk: (data) => log.push(`chunk:${data.toString('utf8')}`),
    end: () => log.push('end'),
    abort: (reason) => log.push(`abort:${reason.name}`),
  };
}

function body(declaredLength: number | null, hasBody = true): { source: FakeSource; body: RequestBody } {
  const source = new FakeSource();
  return { source, body: new RequestBody(source, declaredLength, hasBody) };
}

const buf = (text: string): Buffer => Buffer.from(text, 'utf8');

/** Lets promise callbacks run. */
const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

t.test('the constructor pauses the source when there is a body', (t) => {
  const withBody = body(10);
  t.same(withBody.source.log, ['pause']);
  t.equal(withBody.body.complete, false);
  t.equal(withBody.body.aborted, false);
  t.equal(withBody.body.bytesReceived, 0);
  t.equal(withBody.body.declaredLength, 10);

  const without = body(null, false);
  t.same(without.source.log, [], 'no body: nothing to pause');
  t.equal(without.body.complete, true, 'no body is complete from the start');
  t.end();
});

t.test('chunks pushed before consume are held, then delivered in order on consume, then the source resumes', (t) => {
  const { source, body: b } = body(null);
  b.push(buf('one'), false);
  b.push(buf(''), false);
  b.push(buf('two'), false);
  t.same(source.log, ['pause'], 'nothing resumes before a consumer attaches');
  t.equal(b.bytesReceived, 6);
  b.consume(recorder(source.log));
  t.same(source.log, ['pause', 'chunk:one', 'chunk:two', 'resume'], 'held chunks first, empty chunk skipped, then resume');
  b.push(buf('three'), false);
  b.push(buf(''), true);
  t.same(source.log, ['pause', 'chunk:one', 'chunk:two', 'resume', 'chunk:three', 'end'], 'later chunks flow straight through');
  t.equal(b.complete, true);
  t.equal(b.bytesReceived, 11);
  t.end();
});

t.test('a body that ended before consume is delivered whole, and the socket resumes for the next request', (t) => {
  const { source, body: b } = body(5);
  b.push(buf('ab'), false);
  b.push(buf('cde'), true);
  t.equal(b.complete, true);
  b.consume(recorder(source.log));
  t.same(source.log, ['pause', 'chunk:ab', 'chunk:cde', 'resume', 'end']);
  t.end();
});

t.test('pause() and resume() reach the source once a consumer takes the bytes', (t) => {
  const { source, body: b } = body(null);
  b.resume();
  t.same(source.log, ['pause'], 'nothing resumes before a consumer attaches');
  b.consume(recorder([]));
  b.pause();
  b.pause();
  b.resume();
  t.same(source.log, ['pause', 'resume', 'pause', 'resume'], 'each change once');
  t.end();
});

t.test('chunks a paused transport still delivers are held and handed over in order on resume', (t) => {
  const { source, body: b } = body(null);
  b.consume(recorder(source.log));
  b.pause();
  b.push(buf('late1'), false);
  b.push(buf('late2'), true);
  t.same(source.log, ['pause', 'resume', 'pause'], 'nothing reaches a paused consumer');
  t.equal(b.backlogBytes, 10);
  b.resume();
  t.same(source.log, ['pause', 'resume', 'pause', 'chunk:late1', 'chunk:late2', 'resume', 'end'], 'backlog, then the socket, then end');
  t.equal(b.backlogBytes, 0);
  t.end();
});

t.test('a consumer that pauses while taking the backlog stops it there', (t) => {
  const { source, body: b } = body(null);
  const log = source.log;
  b.consume({ chunk: (data) => { log.push(`chunk:${data}`); if (String(data) === 'a') b.pause(); }, end: () => log.push('end'), abort: () => log.push('abort') });
  b.pause();
  for (const text of ['a', 'b', 'c']) b.push(buf(text), false);
  b.resume();
  t.same(log.slice(3), ['chunk:a'], 'stopped after the chunk that paused');
  b.resume();
  t.same(log.slice(3), ['chunk:a', 'chunk:b', 'chunk:c', 'resume']);
  t.end();
});

t.test('push() copies the transport memory it is given', (t) => {
  const { body: b } = body(null);
  const received: Buffer[] = [];
  b.consume({ chunk: (data) => received.push(data), end: () => undefined, abort: () => undefined });
  const transport = new Uint8Array(Buffer.from('first'));
  b.push(transport, false);
  b.pause();
  b.push(transport, false);
  transport.fill(0x7a);
  b.resume();
  t.same(received.map(String), ['first', 'first'], 'neither the delivered nor the held chunk changed with the transport buffer');
  t.end();
});

t.test('bytes() collects the whole body', async (t) => {
  const { source, body: b } = body(null);
  b.push(buf('hello '), false);
  const read = b.bytes(100);
  b.push(buf('world'), true);
  t.equal((await read).toString('utf8'), 'hello world');
  t.same(source.log, ['pause', 'resume']);

  const single = body(3);
  single.body.push(buf('abc'), true);
  t.equal((await single.body.bytes(3)).toString('utf8'), 'abc', 'exactly the limit is allowed');
});

t.test('bytes() rejects with 413 when the declared length exceeds the limit, without consuming or resuming', async (t) => {
  const { source, body: b } = body(2048);
  b.push(buf('held'), false);
  const error = await b.bytes(1024).then(
    () => null,
    (e: unknown) => e,
  );
  t.type(error, ServiceError);
  const serviceError = error as ServiceError;
  t.equal(serviceError.status, 413);
  t.equal(serviceError.name, 'PayloadTooLargeError');
  t.equal(serviceError.messageKey, 'error.payloadTooLarge');
  t.equal(serviceError.value, 1024);
  t.same(source.log, ['pause'], 'the socket stays paused');
  const log: string[] = [];
  t.doesNotThrow(() => b.consume(recorder(log)), 'no consumer was attached');
  t.same(log, ['chunk:held'], 'the held chunk was not read away');
});

t.test('bytes() rejects with 413 when streamed bytes exceed the limit, and pauses the source', async (t) => {
  for (const declared of [null, 4]) {
    const { source, body: b } = body(declared);
    const read = b.bytes(8);
    b.push(buf('12345'), false);
    b.push(buf('6789'), false);
    const error = await read.then(
      () => null,
      (e: unknown) => e,
    );
    t.type(error, ServiceError, `declared ${declared}`);
    t.equal((error as ServiceError).status, 413);
    t.equal((error as ServiceError).value, 8);
    t.same(source.log, ['pause', 'resume', 'pause'], 'paused again once over the limit');
    b.push(buf('more'), true);
    t.equal(b.complete, true, 'later chunks are ignored without error');
  }
});

t.test('json() parses the body', async (t) => {
  const { body: b } = body(null);
  const read = b.json(1024);
  b.push(buf('{"name":"caf'), false);
  b.push(Buffer.from([0xc3]), false);
  b.push(Buffer.from([0xa9]), false);
  b.push(buf('","n":[1,2]}'), true);
  t.same(await read, { name: 'café', n: [1, 2] }, 'a multi-byte character split across chunks survives');
});

t.test('json() returns {} for an empty body', async (t) => {
  const empty = body(0);
  empty.body.push(Buffer.alloc(0), true);
  t.same(await empty.body.json(1024), {});

  const none = body(null, false);
  t.same(await none.body.json(1024), {}, 'no body at all');
});

t.test('json() rejects malformed JSON with 400 error.badRequest', async (t) => {
  for (const text of ['{"a":', 'not json', '{a:1}', '\u0000']) {
    const { body: b } = body(null);
    b.push(buf(text), true);
    const error = await b.json(1024).then(
      () => null,
      (e: unknown) => e,
    );
    t.type(error, ServiceError, JSON.stringify(text));
    t.equal((error as ServiceError).status, 400);
    t.equal((error as ServiceError).name, 'BadRequestError');
    t.equal((error as ServiceError).messageKey, 'error.badRequest');
    t.equal((error as ServiceError).message, 'The request body is not valid JSON.');
  }
});

t.test('json() passes on a 413 from bytes()', async (t) => {
  const { body: b } = body(5000);
  const error = await b.json(1024).then(
    () => null,
    (e: unknown) => e,
  );
  t.type(error, ServiceError);
  t.equal((error as ServiceError).status, 413);
});

t.test('fail() before consume rejects the read with the reason', async (t) => {
  const { source, body: b } = body(null);
  b.push(buf('partial'), false);
  b.fail(new ClientAbortedError());
  t.equal(b.aborted, true);
  await t.rejects(b.bytes(1024), ClientAbortedError);
  t.same(source.log, ['pause'], 'an aborted body is never resumed');
});

t.test('fail() after consume rejects the read with the reason', async (t) => {
  const { body: b } = body(null);
  const read = b.bytes(1024);
  b.push(buf('partial'), false);
  await tick();
  b.fail(new ClientAbortedError());
  const error = await read.then(
    () => null,
    (e: unknown) => e,
  );
  t.type(error, ClientAbortedError);
  t.equal((error as Error).message, 'The client closed the connection');
  t.equal((error as Error).name, 'ClientAbortedError');
});

t.test('fail() tells a consumer once and is ignored after the body ended', (t) => {
  const { source, body: b } = body(null);
  b.consume(recorder(source.log));
  b.fail(new ClientAbortedError());
  b.fail(new Error('second'));
  t.same(source.log, ['pause', 'resume', 'abort:ClientAbortedError']);

  const ended = body(3);
  ended.body.push(buf('abc'), true);
  ended.body.fail(new ClientAbortedError());
  t.equal(ended.body.aborted, false, 'a complete body cannot be aborted');
  t.end();
});

t.test('no body (hasBody false) reads as empty immediately', async (t) => {
  const { source, body: b } = body(null, false);
  const data = await b.bytes(1024);
  t.equal(data.length, 0);
  t.same(source.log, [], 'neither paused nor resumed');

  const log: string[] = [];
  body(null, false).body.consume(recorder(log));
  t.same(log, ['end'], 'a consumer gets end straight away');
});

t.test('consuming twice throws', async (t) => {
  const { source, body: b } = body(null);
  b.consume(recorder(source.log));
  t.throws(() => b.consume(recorder([])), { message: 'request body is already being consumed' });
  await t.rejects(b.bytes(1024), { message: 'request body is already being consumed' }, 'bytes() after consume rejects');

  const read = body(null, false).body;
  await read.bytes(10);
  await t.rejects(read.bytes(10), { message: 'request body is already being consumed' }, 'a body can be read only once');
});

t.test('with buffering, a backlog past memoryBytes goes to an unlinked spool file and comes back in order', async (t) => {
  const spoolDirectory = t.testdir();
  const source = new FakeSource();
  const b = new RequestBody(source, null, true, { memoryBytes: 8, spoolDirectory });
  const received: string[] = [];
  let ended = false;
  b.consume({ chunk: (data) => received.push(data.toString('utf8')), end: () => (ended = true), abort: () => t.fail('no abort') });
  b.pause();
  const sent = Array.from({ length: 50 }, (_, i) => `chunk-${i};`);
  for (const text of sent) b.push(buf(text), false);
  t.equal(b.backlogBytes, sent.join('').length, 'everything is held');
  t.same(readdirSync(spoolDirectory), [], 'the spool file is unlinked as soon as it is opened');
  b.resume();
  t.same(received, [sent[0]], 'the in-memory part is handed over at once');
  b.push(buf('after;'), true); // arrives while the spool is read back: it must queue behind it
  await eventually(() => ended);
  t.equal(received.join(''), sent.join('') + 'after;', 'every byte, in order');
  t.equal(b.backlogBytes, 0);
  t.same(source.log, ['pause', 'resume', 'pause', 'resume'], 'the socket resumes only once the backlog is gone');
});

t.test('a consumer that takes chunks while paused gets them at once, as views of the transport memory', (t) => {
  const spoolDirectory = join(t.testdir(), 'spool');
  const source = new FakeSource();
  const b = new RequestBody(source, null, true, { memoryBytes: 8, spoolDirectory });
  const received: string[] = [];
  let takes = false;
  b.consume({
    chunk: (data, transient) => received.push(`${data.toString('utf8')}${transient ? ' (transient)' : ''}`),
    takesWhilePaused: () => takes,
    end: () => received.push('end'),
    abort: () => t.fail('no abort'),
  });
  b.pause();
  b.push(buf('abcd'), false);
  t.same(received, [], 'a consumer that cannot take more while paused: held in memory');
  takes = true;
  const transport = Buffer.from('efgh');
  b.push(transport, false);
  t.same(received, ['abcd', 'efgh (transient)'], 'the held chunk first, as its own copy, then the new one as a view');
  t.equal(b.backlogBytes, 0, 'nothing is left behind');
  takes = false;
  b.push(buf('ijklmnopq'), false);
  t.equal(b.backlogBytes, 9, 'a consumer that cannot take more gets memory and the spool as before');
  t.ok(existsSync(spoolDirectory), 'the spool was opened for it');
  t.same(source.log, ['pause', 'resume', 'pause'], 'after the consumer paused, the socket stays paused throughout');
  t.end();
});

t.test('a pending spool is read back synchronously, in order, before a chunk is handed over', (t) => {
  const b = new RequestBody(new FakeSource(), null, true, { memoryBytes: 0, spoolDirectory: t.testdir() });
  const received: string[] = [];
  let takes = false;
  b.consume({ chunk: (data) => received.push(data.toString('utf8')), takesWhilePaused: () => takes, end: () => undefined, abort: () => t.fail('no abort') });
  b.pause();
  b.push(buf('spooled-1;'), false);
  b.push(buf('spooled-2;'), false);
  t.equal(b.backlogBytes, 20, 'spooled');
  takes = true;
  b.push(buf('later;'), false);
  t.equal(received.join(''), 'spooled-1;spooled-2;later;', 'the spool first, then the new chunk');
  t.equal(b.backlogBytes, 0);
  t.end();
});

t.test('a consumer that stops taking while the spool is read back keeps the rest, and the new chunk, behind it', async (t) => {
  const b = new RequestBody(new FakeSource(), null, true, { memoryBytes: 0, spoolDirectory: t.testdir() });
  const received: string[] = [];
  let takes = false;
  let ended = false;
  b.consume({
    chunk: (data) => {
      received.push(data.toString('utf8'));
      takes = false; // e.g. a reservation to wait for, after the first piece
    },
    takesWhilePaused: () => takes,
    end: () => (ended = true),
    abort: () => t.fail('no abort'),
  });
  b.pause();
  b.push(Buffer.alloc(600 * 1024, 'a'), false); // more than one read-back piece (512 KiB)
  takes = true;
  b.push(buf('later;'), false);
  t.equal(received.length, 1, 'one piece taken, then the consumer stopped');
  t.equal(b.backlogBytes, 600 * 1024 - received[0]!.length + 'later;'.length, 'the rest and the new chunk are held');
  b.resume();
  b.push(buf('last;'), true);
  await eventually(() => ended);
  t.equal(received.join(''), 'a'.repeat(600 * 1024) + 'later;last;', 'every byte, in order');
});

t.test('while the spool is being read back asynchronously, new chunks queue behind it', async (t) => {
  const b = new RequestBody(new FakeSource(), null, true, { memoryBytes: 0, spoolDirectory: t.testdir() });
  const received: string[] = [];
  let takes = false;
  let ended = false;
  b.consume({ chunk: (data) => received.push(data.toString('utf8')), takesWhilePaused: () => takes, end: () => (ended = true), abort: () => t.fail('no abort') });
  b.pause();
  b.push(buf('spooled;'), false); // spooled while the consumer did not take
  b.resume(); // the read-back starts (asynchronous)
  takes = true;
  b.pause();
  b.push(buf('later;'), false);
  t.same(received, [], 'nothing overtakes the read in progress');
  b.resume();
  b.push(buf('last;'), true);
  await eventually(() => ended);
  t.equal(received.join(''), 'spooled;later;last;', 'every byte, in order');
});

t.test('pausing while the spool is read back holds the rest until the next resume', async (t) => {
  const b = new RequestBody(new FakeSource(), null, true, { memoryBytes: 0, spoolDirectory: t.testdir() });
  const received: string[] = [];
  b.consume({ chunk: (data) => { received.push(data.toString('utf8')); b.pause(); }, end: () => received.push('<end>'), abort: () => undefined });
  b.pause();
  for (const text of ['x'.repeat(600 * 1024), 'tail']) b.push(buf(text), false);
  b.push(buf(''), true);
  b.resume();
  await eventually(() => received.length === 1);
  t.equal(received[0]!.length, 512 * 1024, 'one read-back chunk, then the consumer paused');
  await tick();
  t.equal(received.length, 1, 'nothing more while paused');
  for (let i = 0; i < 3 && !received.includes('<end>'); i++) {
    b.resume();
    await eventually(() => received.length > i + 1);
  }
  t.equal(received.slice(0, -1).join(''), 'x'.repeat(600 * 1024) + 'tail');
  t.equal(received.at(-1), '<end>');
});

t.test('fail() and discard() drop a spooled backlog; later pushes are ignored', async (t) => {
  for (const stop of ['fail', 'discard'] as const) {
    const log: string[] = [];
    const b = new RequestBody(new FakeSource(), null, true, { memoryBytes: 0, spoolDirectory: t.testdir() });
    b.consume(recorder(log));
    b.pause();
    b.push(buf('spooled'), false);
    if (stop === 'fail') b.fail(new ClientAbortedError());
    else b.discard();
    t.equal(b.backlogBytes, 0, `${stop}: backlog dropped`);
    b.push(buf('more'), false);
    b.resume();
    await tick();
    t.same(log, stop === 'fail' ? ['abort:ClientAbortedError'] : [], `${stop}: nothing is delivered afterwards`);
    t.equal(b.bytesReceived, 11, 'still counted as received');
  }
});

t.test('a spool that cannot be created fails the body with a 503', (t) => {
  const blocker = join(t.testdir(), 'not-a-directory');
  writeFileSync(blocker, '');
  const b = new RequestBody(new FakeSource(), null, true, { memoryBytes: 0, spoolDirectory: join(blocker, 'spool') });
  const log: string[] = [];
  let reason: Error | null = null;
  b.consume({ chunk: () => log.push('chunk'), end: () => log.push('end'), abort: (error) => (reason = error) });
  b.pause();
  b.push(buf('data'), false);
  t.type(reason, ServiceError);
  t.equal((reason as unknown as ServiceError).status, 503);
  t.equal(b.aborted, true);
  t.same(log, []);
  t.end();
});

t.test('a spool that cannot be read back aborts the body, also when it had arrived whole', async (t) => {
  const b = new RequestBody(new FakeSource(), null, true, { memoryBytes: 0, spoolDirectory: t.testdir() });
  let reason: Error | null = null;
  b.consume({ chunk: () => t.fail('nothing can be read back'), end: () => t.fail('no end'), abort: (error) => (reason = error) });
  b.pause();
  b.push(buf('spooled'), true);
  // Make the read-back fail, as a disk error would.
  const spool = (b as unknown as { spool: { read: () => Promise<Buffer> } }).spool;
  spool.read = () => Promise.reject(new Error('EIO'));
  b.resume();
  await eventually(() => reason !== null);
  t.equal((reason as unknown as ServiceError).status, 503);
  t.equal(b.aborted, true);
});

t.test('past its own allowance a body holds up to its extra allowance in memory, taken from the shared budget', async (t) => {
  const spoolDirectory = t.testdir();
  const shared = new MemoryBudget(10);
  const extra = { perBody: 6, shared };
  const first = new RequestBody(new FakeSource(), null, true, { memoryBytes: 4, extra, spoolDirectory });
  const second = new RequestBody(new FakeSource(), null, true, { memoryBytes: 4, extra, spoolDirectory });
  first.push(buf('1234'), false);
  t.equal(shared.used, 0, 'within its own 4 bytes: nothing taken from the shared budget');
  first.push(buf('567890'), false);
  t.equal(shared.used, 6, 'the 6 bytes past its own 4 come from the shared budget');
  first.push(buf('x'), false);
  t.equal(shared.used, 6, 'past its extra 6 it spools, though the shared budget has room');
  t.equal(first.backlogBytes, 11);

  second.push(buf('abcd'), false);
  t.equal(shared.used, 6, 'a second body always has its own 4 bytes');
  second.push(buf('efghij'), false);
  t.equal(shared.used, 6, 'past them, 6 more would overrun the shared 10: it spools');
  second.push(buf('k'), false);
  t.equal(shared.used, 6, 'and once it spools, it keeps spooling until the spool drains (order)');

  const firstLog: string[] = [];
  first.consume(recorder(firstLog));
  await eventually(() => firstLog.length === 3);
  t.same(firstLog, ['chunk:1234', 'chunk:567890', 'chunk:x'], 'the first body hands over its backlog in order');
  t.equal(shared.used, 0, 'and gives its bytes back');

  const secondLog: string[] = [];
  second.consume(recorder(secondLog));
  await eventually(() => secondLog.length === 2);
  t.same(secondLog, ['chunk:abcd', 'chunk:efghijk'], 'the spooled part comes back in order');
  t.equal(shared.used, 0, 'bytes read back from the spool were never taken from the budget');
  second.push(buf('lm'), false);
  t.equal(shared.used, 0, 'a consumer taking chunks as they come holds nothing');
});

t.test('the shared budget gets back exactly what a draining body held past its own allowance', (t) => {
  const shared = new MemoryBudget(100);
  const b = new RequestBody(new FakeSource(), null, true, { memoryBytes: 4, extra: { perBody: 50, shared }, spoolDirectory: t.testdir() });
  for (const text of ['aaa', 'bbb', 'ccc', 'ddd']) b.push(buf(text), false);
  t.equal(shared.used, 8, '12 bytes held, 8 past its own 4');
  const log: string[] = [];
  b.consume({ ...recorder(log), chunk: (data) => {
    log.push(`chunk:${data.toString('utf8')}`);
    log.push(`used:${shared.used}`);
    if (log.length === 4) b.pause();
  } });
  t.same(log, ['chunk:aaa', 'used:5', 'chunk:bbb', 'used:2'], 'each chunk handed over gives back what it took past the allowance');
  b.push(buf('eee'), false);
  t.equal(shared.used, 5, 'held again: 9 bytes, 5 past the allowance');
  b.resume();
  t.equal(shared.used, 0);
  t.end();
});

t.test('the shared budget gets back what fail(), discard() and releaseUnread() drop', (t) => {
  const shared = new MemoryBudget(100);
  const extra = { perBody: 100, shared };
  for (const stop of ['fail', 'discard', 'releaseUnread'] as const) {
    const b = new RequestBody(new FakeSource(), null, true, { memoryBytes: 2, extra, spoolDirectory: t.testdir() });
    b.push(buf('held'), stop === 'releaseUnread'); // releaseUnread: a whole body nobody read
    t.equal(shared.used, 2, `${stop}: bytes past the body's own allowance are taken from the budget`);
    if (stop === 'fail') b.fail(new ClientAbortedError());
    else if (stop === 'discard') b.discard();
    else b.releaseUnread();
    t.equal(shared.used, 0, `${stop}: and given back`);
    t.equal(b.backlogBytes, 0);
  }

  const released = new RequestBody(new FakeSource(), null, true, { memoryBytes: 2, extra, spoolDirectory: t.testdir() });
  released.push(buf('part'), false);
  released.releaseUnread();
  released.push(buf('rest'), true);
  t.equal(shared.used, 0, 'what arrives after releaseUnread is not held');
  t.equal(released.backlogBytes, 0);

  const consumed = new RequestBody(new FakeSource(), null, true, { memoryBytes: 2, extra, spoolDirectory: t.testdir() });
  const log: string[] = [];
  consumed.push(buf('all'), true);
  consumed.consume(recorder(log));
  consumed.releaseUnread();
  t.same(log, ['chunk:all', 'end'], 'releaseUnread after the body was read changes nothing');
  t.equal(shared.used, 0);
  t.end();
});

t.test('a consumer that would only copy a chunk gets a view of the transport memory; any other a copy', (t) => {
  const b = new RequestBody(new FakeSource(), null, true);
  const received: { data: Buffer; transient: boolean }[] = [];
  let takesTransient = false;
  b.consume({
    chunk: (data, transient) => received.push({ data, transient: transient === true }),
    takesTransient: () => takesTransient,
    end: () => undefined,
    abort: () => t.fail('no abort'),
  });
  // Larger than Buffer's shared pool: each has a memory of its own.
  const first = Buffer.alloc(8192, 'a');
  b.push(first, false);
  t.equal(received[0]!.transient, false, 'not transient while the consumer would keep the chunk');
  t.not(received[0]!.data.buffer, first.buffer, 'a copy of the transport memory');
  takesTransient = true;
  const second = Buffer.alloc(8192, 'b');
  b.push(second, false);
  t.equal(received[1]!.transient, true, 'transient once the consumer only copies');
  t.equal(received[1]!.data.buffer, second.buffer, 'a view of the transport memory, not a copy');
  t.ok(received[1]!.data.equals(second));
  t.end();
});

t.test('a spool is read back synchronously as views to a consumer that would only copy, until it pauses', async (t) => {
  const b = new RequestBody(new FakeSource(), null, true, { memoryBytes: 0, spoolDirectory: t.testdir() });
  const received: { text: string; transient: boolean }[] = [];
  let ended = false;
  let pauseAfter = 1;
  b.consume({
    chunk: (data, transient) => {
      received.push({ text: data.toString('utf8'), transient: transient === true });
      if (--pauseAfter === 0) b.pause(); // e.g. the writer's buffers are full after the first piece
    },
    takesTransient: () => true,
    end: () => (ended = true),
    abort: () => t.fail('no abort'),
  });
  b.pause();
  const spooled = Buffer.alloc(600 * 1024, 'a'); // more than one read-back piece (512 KiB)
  b.push(spooled, false);
  t.equal(b.backlogBytes, spooled.length, 'spooled while paused');
  b.resume();
  t.equal(received.length, 1, 'the first piece at once, without waiting for the thread pool; then the consumer paused');
  t.ok(received[0]!.transient, 'handed over as a view of the scratch buffer');
  t.equal(received[0]!.text.length, 512 * 1024);
  t.equal(b.backlogBytes, spooled.length - 512 * 1024, 'the rest stays in the spool while paused');
  pauseAfter = -1;
  b.resume();
  b.push(buf('tail'), true);
  await eventually(() => ended);
  t.ok(received.every((each) => each.transient), 'every piece a view');
  t.equal(received.map((each) => each.text).join(''), 'a'.repeat(600 * 1024) + 'tail', 'every byte, in order');
  t.equal(b.backlogBytes, 0);
});
