import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { badRequest } from '../../errors/errors.ts';

/**
 * Where automations may send. Only http(s) URLs without credentials; and unless
 * AUTOMATION_ALLOW_PRIVATE_TARGETS is set, never to an address that is not
 * publicly routable (loopback, private networks, link-local and cloud metadata,
 * carrier-grade NAT, multicast, reserved). The check runs twice: on the URL when
 * a target is saved (literal addresses, `localhost`), and on every address the
 * host name resolves to when a delivery connects, so a public name that points
 * at an internal address (or is re-pointed later) is refused as well.
 */

export const MAX_URL_LENGTH = 2048;

const blocked = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], ['::1', 128], ['64:ff9b:1::', 48], ['100::', 64], ['2001:db8::', 32], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv6');
}

/** IPv4 embedded in an IPv6 address (mapped ::ffff:a.b.c.d, or NAT64 64:ff9b::a.b.c.d), else null. */
function embeddedIpv4(address: string): string | null {
  const match = /^(?:::ffff:|64:ff9b::)(?:0:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (match) return match[1]!;
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return null;
  const high = parseInt(hex[1]!, 16);
  const low = parseInt(hex[2]!, 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/** True for an IP address that is not publicly routable. */
export function isPrivateAddress(address: string): boolean {
  const plain = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(plain);
  if (family === 4) return blocked.check(plain, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(plain);
    if (v4) return blocked.check(v4, 'ipv4');
    return blocked.check(plain, 'ipv6');
  }
  return false;
}

function isLocalName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

export interface TargetUrlOptions {
  allowPrivateTargets: boolean;
}

/** Validates a target URL for storing; the answer is its normalised form. 400 naming `url` otherwise. */
export function parseTargetUrl(value: string, options: TargetUrlOptions): string {
  if (value.length > MAX_URL_LENGTH) throw badRequest(`Invalid url: at most ${MAX_URL_LENGTH} characters`, 'url');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw badRequest('Invalid url: not an absolute URL', 'url');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw badRequest('Invalid url: only http and https URLs are allowed', 'url');
  if (url.username || url.password) throw badRequest('Invalid url: credentials in the URL are not allowed', 'url');
  if (!url.hostname) throw badRequest('Invalid url: no host', 'url');
  if (!options.allowPrivateTargets && (isPrivateAddress(url.hostname) || isLocalName(url.hostname))) {
    throw badRequest('Invalid url: the address is not public (AUTOMATION_ALLOW_PRIVATE_TARGETS is off)', 'url');
  }
  url.hash = '';
  const normalised = url.toString();
  if (normalised.length > MAX_URL_LENGTH) throw badRequest(`Invalid url: at most ${MAX_URL_LENGTH} characters`, 'url');
  return normalised;
}

export class PrivateTargetError extends Error {
  override name = 'PrivateTargetError';
  readonly code = 'EPRIVATETARGET';
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
type Resolver = (hostname: string, options: LookupOptions, callback: LookupCallback) => void;

/**
 * A `lookup` for net/http that refuses host names resolving to any address that
 * is not public, so the check holds for the address actually connected to
 * (no gap between checking and connecting for DNS rebinding to use).
 */
export function guardedLookup(resolve: Resolver = dnsLookup as unknown as Resolver) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname, options, (error, address, family) => {
      if (error) {
        callback(error, address, family);
        return;
      }
      const addresses = Array.isArray(address) ? address.map((entry) => entry.address) : [address];
      const refused = addresses.find((entry) => isPrivateAddress(entry));
      if (refused !== undefined) {
        callback(new PrivateTargetError(`${hostname} resolves to ${refused}, which is not a public address`), address, family);
        return;
      }
      callback(null, address, family);
    });
  };
}
