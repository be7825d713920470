import t from 'tap';
import type { Test } from 'tap';
import { App, us_listen_socket_close, us_socket_local_port, type HttpResponse, type TemplatedApp, type us_listen_socket, type us_socket } from 'uWebSockets.js';
import { RawConnection } from '../helpers/raw-connection.ts';

// uWebSockets.js (uws-pack 20.0.8) on its own, without any code of the service: the behaviour the
// HTTP layer (src/http/server.ts, src/http/framing.ts) works around, or cannot change. If one of
// these starts failing after an upgrade of uWS, the workaround may be obsolete.

type Handler = (res: HttpResponse, url: string, events: string[]) => void;

async function uwsServer(t: Test, handler: Handler): Promise<{ port: number; events: string[] }> {
  const app: TemplatedApp = App();
  const events: string[] = [];
  app.any('/*', (res, req) => {
    const url = req.getUrl();
    events.push(`request ${url}`);
    res.onAborted(() => events.push(`aborted ${url}`));
    res.onData((_chunk, isLast) => {
      if (isLast) events.push(`body ${url}`);
    });
    handler(res, url, events);
  });
  const socket = await new Promise<us_listen_socket>((resolve, reject) => app.listen('127.0.0.1', 0, (s) => (s ? resolve(s) : reject(new Error('listen')))));
  t.teardown(() => {
    us_listen_socket_close(socket);
    app.close();
  });
  return { port: us_socket_local_port(socket as unknown as us_socket), events };
}

const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

t.test('uWS answers Expect: 100-continue itself, before a handler can refuse', async (t) => {
  const { port } = await uwsServer(t, (res) => {
    // Refuses as early as possible: synchronously, in the handler.
    res.writeStatus('413 Payload Too Large').end('no');
  });
  const connection = await RawConnection.open(port);
  t.teardown(() => connection.destroy());
  connection.write('POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\nExpect: 100-continue\r\n\r\n');
  t.equal((await connection.next()).status, 100, '100 Continue first');
  t.equal((await connection.next()).status, 413, 'then the refusal');
});

t.test('every answer carries `uWebSockets: 20`; nothing public removes it', async (t) => {
  const { port } = await uwsServer(t, (res) => res.end('ok'));
  const connection = await RawConnection.open(port);
  t.teardown(() => connection.destroy());
  connection.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  t.equal((await connection.next()).headers['uwebsockets'], '20');
});

t.test('endWithoutBody: undefined as length announces 2^63 bytes; a real length leaves the response pending', async (t) => {
  const { port, events } = await uwsServer(t, (res, url) => {
    if (url === '/undefined') res.writeStatus('204 No Content').endWithoutBody(undefined, false);
    else if (url === '/length') res.endWithoutBody(17);
    else res.end('ok');
  });
  const first = await RawConnection.open(port);
  t.teardown(() => first.destroy());
  first.write('GET /undefined HTTP/1.1\r\nHost: x\r\n\r\n');
  t.equal((await first.next()).headers['content-length'], '9223372036854775808');

  const second = await RawConnection.open(port);
  t.teardown(() => second.destroy());
  second.write('HEAD /length HTTP/1.1\r\nHost: x\r\n\r\n');
  const head = await second.next({ bodyless: true });
  t.equal(head.headers['content-length'], '17', 'the length is announced');
  second.write('GET /next HTTP/1.1\r\nHost: x\r\n\r\n');
  await second.closed;
  t.ok(events.includes('aborted /length'), 'the HEAD answer still counted as pending: the next request closed the connection');
  t.notOk(events.includes('request /next'), 'and was not served');
});

t.test('a first Connection field of 5 characters: closed as soon as the answer ends, body unread; a written, unended answer keeps it open', async (t) => {
  const { port } = await uwsServer(t, (res, url) => {
    if (url === '/ended') {
      res.cork(() => res.end('no'));
      return;
    }
    res.cork(() => res.write('no'));
    res.onData((_chunk, isLast) => {
      if (isLast) res.cork(() => res.end());
    });
  });
  const open = async (path: string, connection: string) => {
    const raw = await RawConnection.open(port);
    t.teardown(() => raw.destroy());
    raw.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nConnection: ${connection}\r\nContent-Length: 20\r\n\r\n0123456789`);
    const answer = path === '/ended' ? await raw.next() : null;
    await Promise.race([raw.closed, later(500)]);
    return { raw, answer, closed: raw.isClosed };
  };
  for (const value of ['close', 'Close', 'abcde']) {
    const { answer, closed } = await open('/ended', value);
    t.equal(answer?.body.toString(), 'no', `${value}: answered`);
    t.ok(closed, `${value}: closed at once, with 10 body bytes still to come`);
  }
  for (const value of ['keep-alive, close', 'keep-alive']) t.notOk((await open('/ended', value)).closed, `${value}: left open`);
  const written = await open('/written', 'close');
  t.notOk(written.closed, 'written, not ended: open while the body arrives');
  written.raw.write('0123456789');
  await Promise.race([written.raw.closed, later(2000)]);
  t.ok(written.raw.isClosed, 'ended once the body has arrived: closed');
  const answer = await written.raw.next();
  t.equal(answer.headers['transfer-encoding'], 'chunked', 'the written answer is chunked');
  t.equal(answer.body.toString(), 'no', 'and arrived whole');
});

t.test('a request pipelined in the same read closes the connection while the first is unanswered', async (t) => {
  const { port, events } = await uwsServer(t, (res, url) => {
    setTimeout(() => events.includes(`aborted ${url}`) || res.cork(() => res.end('ok')), 50);
  });
  const connection = await RawConnection.open(port);
  connection.write('POST /one HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /two HTTP/1.1\r\nHost: x\r\n\r\n');
  await connection.closed;
  t.same(events, ['request /one', 'body /one', 'aborted /one'], 'the first handler ran and got its body, then the connection closed; the second was never routed');
});

t.test('two Content-Length fields: uWS frames the body by the first', async (t) => {
  const { port, events } = await uwsServer(t, (res, url) => {
    res.onData((chunk, isLast) => {
      events.push(`${url} ${chunk.byteLength}`);
      if (isLast) res.end('ok');
    });
  });
  const connection = await RawConnection.open(port);
  t.teardown(() => connection.destroy());
  connection.write('POST /two HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabcde');
  t.equal((await connection.next()).status, 200);
  t.ok(events.includes('/two 3'), 'a 3-byte body; the other 2 bytes are read as the next request');
});

t.test('a body arriving slower than 16 KiB/s is cut after about 10 s, unless pause()/resume() re-arm the timer', async (t) => {
  const { port, events } = await uwsServer(t, (res, url) => {
    let last = 0;
    res.onData((_chunk, isLast) => {
      if (url === '/rearmed' && Date.now() - last >= 1000) {
        last = Date.now();
        res.pause();
        res.resume();
      }
      if (isLast) res.end('ok');
    });
  });
  const trickle = async (path: string) => {
    const connection = await RawConnection.open(port);
    connection.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 15360\r\n\r\n`);
    for (let sent = 0; sent < 15_360 && !connection.isClosed; sent += 1024) {
      connection.write(Buffer.alloc(1024));
      await later(1000);
    }
    const answer = connection.isClosed ? null : await connection.next().catch(() => null);
    connection.destroy();
    return answer?.status ?? 'closed';
  };
  const [plain, rearmed] = await Promise.all([trickle('/plain'), trickle('/rearmed')]);
  t.equal(plain, 'closed', 'uWS closed the plain one');
  t.ok(events.includes('aborted /plain'));
  t.equal(rearmed, 200, 'the re-armed one got its whole 15 KiB body in 15 s');
});
