import { connect } from 'node:net';
import t from 'tap';
import { pino } from 'pino';
import { MemoryBudget } from '../../src/http/memory-budget.ts';
import { Router } from '../../src/http/router.ts';
import { HttpServer } from '../../src/http/server.ts';
import { json } from '../../src/http/types.ts';
import { eventually } from '../helpers/wait.ts';

// A real listening uWS server whose paused bodies draw on a small shared budget: whatever way an
// exchange ends, the memory its body held past its own allowance goes back.
const KiB = 1024;
const shared = new MemoryBudget(4 * 1024 * KiB);
const router = new Router();
// Answers without reading the body.
router.add({ method: 'POST', pattern: '/ignore', handler: () => json(200, { ignored: true }) });
// Never reads the body, and answers when the test says so.
let answer: () => void = () => undefined;
router.add({
  method: 'POST',
  pattern: '/wait',
  handler: () => new Promise((resolve) => (answer = () => resolve(json(200, {})))),
});
router.add({ method: 'POST', pattern: '/read', handler: async (request) => json(200, { bytes: (await request.body.bytes(8 * 1024 * KiB)).length }) });
const httpServer = new HttpServer({
  router,
  logger: pino({ level: 'silent' }),
  bodyBuffering: { memoryBytes: 64 * KiB, extra: { perBody: 1024 * KiB, shared }, spoolDirectory: t.testdir() },
});
const port = await httpServer.listen('127.0.0.1', 0);
t.teardown(() => httpServer.close());

function rawPost(path: string, size: number): { socket: ReturnType<typeof connect>; answered: Promise<string> } {
  const socket = connect(port, '127.0.0.1');
  socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: ${size}\r\n\r\n`);
  socket.write(Buffer.alloc(size, 7));
  let text = '';
  const answered = new Promise<string>((resolve) => {
    socket.on('data', (data) => {
      text += data.toString('latin1');
      if (text.includes('\r\n\r\n')) resolve(text);
    });
    socket.on('close', () => resolve(text));
    socket.on('error', () => resolve(text));
  });
  return { socket, answered };
}

t.test('a body read whole gives back what it held', async (t) => {
  const { socket, answered } = rawPost('/read', 2 * 1024 * KiB);
  t.match(await answered, /^HTTP\/1\.1 200/);
  t.ok(await eventually(() => shared.used === 0), `the budget is whole again (${shared.used} used)`);
  socket.destroy();
});

t.test('a body nobody read gives back what it held, whether the connection stays open or closes', async (t) => {
  for (const size of [200 * KiB, 3 * 1024 * KiB]) {
    const { socket, answered } = rawPost('/ignore', size);
    t.match(await answered, /^HTTP\/1\.1 200/, `${size} bytes: answered`);
    t.ok(await eventually(() => shared.used === 0), `${size} bytes: the budget is whole again (${shared.used} used)`);
    socket.destroy();
  }
});

t.test('a paused body whose client leaves gives back what it held once its exchange ends, whether it had arrived whole or not', async (t) => {
  for (const size of [100 * KiB, 600 * KiB]) {
    const { socket } = rawPost('/wait', size);
    // uWS goes on reading a paused socket for a while: the body holds bytes past its own 64 KiB.
    t.ok(await eventually(() => shared.used > 0), `${size} bytes: the paused body holds bytes past its own allowance`);
    t.ok(shared.used <= 1024 * KiB, `${size} bytes: but no more than its extra allowance`);
    socket.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
    answer();
    t.ok(await eventually(() => shared.used === 0), `${size} bytes: the budget is whole again (${shared.used} used)`);
  }
});
