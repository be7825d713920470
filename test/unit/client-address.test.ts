import t from 'tap';
import { clientAddress, compileTrustedProxies } from '../../src/http/client-address.ts';
import { parseTrustedProxies } from '../../src/config/trusted-proxies.ts';

const trusted = compileTrustedProxies(parseTrustedProxies('127.0.0.1, 10.0.0.0/8, ::1'));
const from = (peer: string, fields: Array<[string, string]>, trust = trusted) => clientAddress(peer, fields, trust);

t.test('no forwarding header: the peer, not via a proxy', async (t) => {
  t.same(from('192.0.2.1', []), { address: '192.0.2.1', viaProxy: false });
  t.same(from('127.0.0.1', [['user-agent', 'curl']]), { address: '127.0.0.1', viaProxy: false });
});

t.test('X-Forwarded-For from a trusted peer: right to left past trusted hops', async (t) => {
  t.equal(from('127.0.0.1', [['x-forwarded-for', '203.0.113.5']]).address, '203.0.113.5');
  t.equal(from('127.0.0.1', [['x-forwarded-for', '198.51.100.1, 203.0.113.5, 10.1.2.3']]).address, '203.0.113.5', 'a trusted inner hop is skipped, a forged left part ignored');
  t.equal(from('127.0.0.1', [['x-forwarded-for', '198.51.100.1'], ['x-forwarded-for', '203.0.113.5']]).address, '203.0.113.5', 'repeated fields are one list');
  t.equal(from('127.0.0.1', [['x-forwarded-for', '10.0.0.7, 10.0.0.8']]).address, '10.0.0.7', 'every hop trusted: the leftmost');
  t.equal(from('0000:0000:0000:0000:0000:ffff:7f00:0001', [['x-forwarded-for', '203.0.113.9']]).address, '203.0.113.9', 'an IPv4-mapped peer as uWS writes it');
  t.equal(from('::1', [['x-forwarded-for', '2001:db8::7']]).address, '2001:db8::7');
  t.equal(from('127.0.0.1', [['x-forwarded-for', 'unknown']]).address, '127.0.0.1', 'a hop that is no address: the proxy that reported it');
});

t.test('Forwarded (RFC 7239) when there is no X-Forwarded-For', async (t) => {
  t.equal(from('127.0.0.1', [['forwarded', 'for=203.0.113.43;proto=https']]).address, '203.0.113.43');
  t.equal(from('127.0.0.1', [['forwarded', 'for="203.0.113.43:47011"']]).address, '203.0.113.43', 'a port is dropped');
  t.equal(from('127.0.0.1', [['forwarded', 'for="[2001:db8:cafe::17]:4711"']]).address, '2001:db8:cafe::17', 'brackets and port are dropped');
  t.equal(from('127.0.0.1', [['forwarded', 'for=198.51.100.1, for=203.0.113.43']]).address, '203.0.113.43');
  t.equal(from('127.0.0.1', [['forwarded', 'for=_hidden']]).address, '127.0.0.1', 'an obfuscated node: the proxy that reported it');
  t.equal(from('127.0.0.1', [['forwarded', 'for=203.0.113.43;;;broken']]).address, '127.0.0.1', 'a header that does not parse: the peer');
  t.equal(from('127.0.0.1', [['forwarded', 'for=198.51.100.99'], ['x-forwarded-for', '203.0.113.5']]).address, '203.0.113.5', 'X-Forwarded-For wins when both are sent');
});

t.test('headers from an untrusted peer, or with no trusted proxies, are ignored but noted', async (t) => {
  t.same(from('192.0.2.1', [['x-forwarded-for', '203.0.113.5']]), { address: '192.0.2.1', viaProxy: true });
  t.same(from('127.0.0.1', [['forwarded', 'for=203.0.113.5']], null), { address: '127.0.0.1', viaProxy: true });
});

t.test('TRUSTED_PROXIES parsing', async (t) => {
  t.same(parseTrustedProxies(''), []);
  t.same(parseTrustedProxies(' 127.0.0.1 ,10.0.0.0/8,,::1, fd00::/8 '), ['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8']);
  for (const bad of ['localhost', '10.0.0.0/33', '::1/129', '10.0.0.1/8/8', '10.0.0/8', '1.2.3.4/x']) {
    t.throws(() => parseTrustedProxies(bad), /not an IP address or CIDR range/, bad);
  }
});
