import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import type { Test } from 'tap';
import { guardedLookup, isPrivateAddress, parseTargetUrl, PrivateTargetError } from '../../src/domain/automations/target-url.ts';
import { ServiceError } from '../../src/errors/service-error.ts';
import { backoffDelayMs, retryAfterMs } from '../../src/automation-delivery/backoff.ts';
import { WebhookSender } from '../../src/automation-delivery/webhook-sender.ts';

t.test('isPrivateAddress: loopback, private, link-local, CGNAT, multicast, reserved, mapped IPv6', (t) => {
  for (const address of [
    '127.0.0.1', '127.255.0.9', '10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0',
    '224.0.0.1', '255.255.255.255', '198.18.0.1', '::1', '::', 'fe80::1', 'fd12:3456::1', 'fc00::1', 'ff02::1', '::ffff:127.0.0.1',
    '::ffff:7f00:1', '::ffff:10.1.2.3', '64:ff9b::10.0.0.1', '[::1]', 'fe80::1%eth0',
  ]) {
    t.ok(isPrivateAddress(address), `${address} is not public`);
  }
  for (const address of ['93.184.215.14', '8.8.8.8', '172.32.0.1', '192.169.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', 'example.com']) {
    t.notOk(isPrivateAddress(address), `${address} is public (or not an address)`);
  }
  t.end();
});

t.test('isPrivateAddress: IPv6 forms that embed an IPv4 address are judged by it (issue 17.9)', (t) => {
  for (const address of [
    '::127.0.0.1', '::7f00:1', '[::127.0.0.1]', '::10.0.0.1', '::169.254.169.254', // IPv4-compatible (deprecated)
    '::ffff:0:127.0.0.1', '::ffff:0:7f00:1', '[::ffff:0:127.0.0.1]', '::ffff:0:192.168.0.1', // IPv4-translated (RFC 6145)
    '2002:7f00:1::1', '[2002:7f00:1::1]', '2002:a00:1::', '2002:a9fe:a9fe::1', // 6to4
    '64:ff9b::127.0.0.1', '64:ff9b::7f00:1', '64:ff9b::a9fe:a9fe', '64:ff9b::192.168.1.1', // NAT64, well-known prefix
    '64:ff9b:1::8.8.8.8', '64:ff9b:1:2::1', // local-use NAT64 (RFC 8215): never public
    '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo
    '::ffff:127.0.0.1', '::ffff:7f00:1', '0:0:0:0:0:ffff:7f00:1',
  ]) {
    t.ok(isPrivateAddress(address), `${address} is not public`);
  }
  for (const address of ['::ffff:0:8.8.8.8', '2002:808:808::1', '64:ff9b::8.8.8.8', '64:ff9b::808:808', '::ffff:1.1.1.1', '2a00:1450:4001:80b::200e']) {
    t.notOk(isPrivateAddress(address), `${address} carries a public address`);
  }
  t.end();
});

function refusal(t: Test, fn: () => unknown): ServiceError | null {
  try {
    fn();
  } catch (error) {
    t.type(error, ServiceError);
    return error as ServiceError;
  }
  t.fail('expected a refusal');
  return null;
}

t.test('parseTargetUrl: http(s) only, no credentials, private addresses only when allowed', (t) => {
  const off = { allowPrivateTargets: false };
  const on = { allowPrivateTargets: true };
  t.equal(parseTargetUrl('https://hooks.example.com/a?b=1#frag', off), 'https://hooks.example.com/a?b=1', 'the fragment is dropped');
  t.equal(parseTargetUrl('HTTP://Hooks.Example.com', off), 'http://hooks.example.com/');
  t.equal(parseTargetUrl('http://127.0.0.1:8080/x', on), 'http://127.0.0.1:8080/x');
  t.equal(parseTargetUrl('http://localhost/x', on), 'http://localhost/x');
  for (const url of [
    'http://127.0.0.1/', 'http://localhost:3000/', 'http://a.localhost/', 'http://[::1]/', 'http://10.0.0.1/', 'http://0x7f000001/', 'http://2130706433/',
    'http://[::127.0.0.1]/', 'http://[::ffff:0:127.0.0.1]:8080/', 'http://[2002:7f00:1::1]/', 'http://[64:ff9b::127.0.0.1]/', 'http://[64:ff9b::a9fe:a9fe]/latest/meta-data',
  ]) {
    const error = refusal(t, () => parseTargetUrl(url, off));
    t.equal(error?.status, 400, url);
    t.equal(error?.value, 'url');
  }
  for (const url of ['ftp://hooks.example.com/', 'file:///etc/passwd', 'javascript:alert(1)', 'hooks.example.com', 'https://u:p@hooks.example.com/', 'https://u@hooks.example.com/']) {
    t.equal(refusal(t, () => parseTargetUrl(url, on))?.status, 400, url);
  }
  t.end();
});

t.test('guardedLookup refuses names that resolve to a private address', async (t) => {
  const fake = (answers: Record<string, string[]>) => (hostname: string, options: { all?: boolean }, callback: (...args: any[]) => void) => {
    const addresses = answers[hostname] ?? [];
    if (addresses.length === 0) return callback(Object.assign(new Error('not found'), { code: 'ENOTFOUND' }), '', 0);
    if (options.all) return callback(null, addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));
    return callback(null, addresses[0], addresses[0]!.includes(':') ? 6 : 4);
  };
  const lookup = guardedLookup(
    fake({
      'public.example': ['93.184.215.14'],
      'rebind.example': ['93.184.215.14', '10.0.0.5'],
      'internal.example': ['127.0.0.1'],
      'dns64.example': ['64:ff9b::7f00:1'],
      'compat.example': ['2606:4700:4700::1111', '::7f00:1'],
      'sixtofour.example': ['2002:a00:1::1'],
    }) as any,
  );
  const run = (hostname: string, all: boolean) =>
    new Promise<{ error: Error | null; address: unknown }>((resolve) => lookup(hostname, { all }, (error, address) => resolve({ error, address })));
  t.same(await run('public.example', false), { error: null, address: '93.184.215.14' });
  t.same((await run('public.example', true)).address, [{ address: '93.184.215.14', family: 4 }]);
  t.type((await run('internal.example', false)).error, PrivateTargetError);
  t.type((await run('rebind.example', true)).error, PrivateTargetError, 'one private address among public ones is enough to refuse');
  for (const name of ['dns64.example', 'compat.example', 'sixtofour.example']) {
    t.type((await run(name, true)).error, PrivateTargetError, `${name}: an IPv6 answer that embeds a private IPv4 address is refused at connect`);
  }
  t.match((await run('missing.example', false)).error, { code: 'ENOTFOUND' });
  // The real resolver: localhost is in /etc/hosts, no network needed.
  const real = guardedLookup();
  const localhost = await new Promise<Error | null>((resolve) => real('localhost', {}, (error) => resolve(error)));
  t.type(localhost, PrivateTargetError);
});

t.test('WebhookSender refuses literal IPv6 targets that embed a private IPv4 address before connecting (issue 17.9)', async (t) => {
  const received: string[] = [];
  const receiver = createServer((request, response) => {
    received.push(request.url ?? '');
    response.writeHead(204).end();
  });
  await new Promise<void>((resolve) => receiver.listen(0, '::', resolve));
  t.teardown(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
  const port = (receiver.address() as AddressInfo).port;
  const sender = new WebhookSender({ allowPrivateTargets: false, userAgent: 'test' });
  t.teardown(() => sender.close());
  const send = (host: string) => sender.send({ url: `http://${host}:${port}/hook`, body: Buffer.from('{}'), headers: {}, timeoutMs: 2000 });
  for (const host of ['[::127.0.0.1]', '[::ffff:0:127.0.0.1]', '[2002:7f00:1::1]', '[64:ff9b::127.0.0.1]', '[::ffff:127.0.0.1]']) {
    await t.rejects(send(host), { name: 'WebhookSendError', message: /is not a public address/ }, host);
  }
  t.same(received, [], 'nothing reached the receiver');
  const allowed = new WebhookSender({ allowPrivateTargets: true, userAgent: 'test' });
  t.teardown(() => allowed.close());
  const answer = await allowed.send({ url: `http://[::ffff:127.0.0.1]:${port}/hook`, body: Buffer.from('{}'), headers: {}, timeoutMs: 2000 });
  t.equal(answer.status, 204, 'the same receiver is reachable when private targets are allowed');
});

t.test('backoff: exponential, capped, with jitter between half and all of the nominal delay', (t) => {
  t.equal(backoffDelayMs(1, 1000, 60_000, () => 0), 500);
  t.equal(backoffDelayMs(1, 1000, 60_000, () => 1), 1000);
  t.equal(backoffDelayMs(2, 1000, 60_000, () => 1), 2000);
  t.equal(backoffDelayMs(4, 1000, 60_000, () => 1), 8000);
  t.equal(backoffDelayMs(10, 1000, 60_000, () => 1), 60_000, 'capped');
  t.equal(backoffDelayMs(10, 1000, 60_000, () => 0), 30_000);
  t.equal(backoffDelayMs(500, 1000, 60_000, () => 0.5), 45_000, 'no overflow for large attempt numbers');
  for (let attempt = 1; attempt <= 12; attempt++) {
    const delay = backoffDelayMs(attempt, 10_000, 3_600_000);
    const nominal = Math.min(3_600_000, 10_000 * 2 ** (attempt - 1));
    t.ok(delay >= nominal / 2 && delay <= nominal, `attempt ${attempt}: ${delay} within [${nominal / 2}, ${nominal}]`);
  }
  t.end();
});

t.test('Retry-After: seconds or an HTTP date', (t) => {
  t.equal(retryAfterMs(undefined), null);
  t.equal(retryAfterMs('7'), 7000);
  t.equal(retryAfterMs(' 0 '), 0);
  t.equal(retryAfterMs('soon'), null);
  const now = Date.parse('2026-11-21T10:00:00Z');
  t.equal(retryAfterMs('Sat, 21 Nov 2026 10:00:30 GMT', now), 30_000);
  t.equal(retryAfterMs('Sat, 21 Nov 2026 09:00:00 GMT', now), 0, 'a date in the past: no wait');
  t.end();
});
