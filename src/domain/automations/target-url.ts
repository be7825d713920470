import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { badRequest } from '../../errors/errors.ts';

/**
 * Where automations may send. Only http(s) URLs without credentials; and unless
 * AUTOMATION_ALLOW_PRIVATE_TARGETS is set, never to an address that is not
 * publicly routable (loopback, private networks, link-local and cloud metadata,
 * carrier-grade NAT, multicast, reserved; also as an IPv6 form that embeds such an
 * IPv4 address). Ranges come from ipaddr.js, which follows the IANA special-purpose
 * registries. The check runs twice: on the URL when
 * a target is saved (literal addresses, `localhost`), and on every address the
 * host name resolves to when a delivery connects, so a public name that points
 * at an internal address (or is re-pointed later) is refused as well.
 */

export const MAX_URL_LENGTH = 2048;

/** NAT64's well-known prefix (RFC 6052): the IPv4 address is the last 32 bits. */
const WELL_KNOWN_NAT64 = ipaddr.IPv6.parseCIDR('64:ff9b::/96');

function ipv4From(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 255, low >> 8, low & 255]);
}

/**
 * The IPv4 address an IPv6 address stands for, for the forms that carry one and reach it:
 * IPv4-mapped (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d, RFC 6145), NAT64 with the
 * well-known prefix (64:ff9b::a.b.c.d), 6to4 (2002:AABB:CCDD::/48) and the deprecated
 * IPv4-compatible form (::a.b.c.d). Null for any other address.
 */
function embeddedIpv4(address: ipaddr.IPv6): ipaddr.IPv4 | null {
  const parts = address.parts;
  const range: string = address.range();
  if (range === 'ipv4Mapped' || range === 'rfc6145' || (range === 'rfc6052' && address.match(WELL_KNOWN_NAT64))) {
    return ipv4From(parts[6]!, parts[7]!);
  }
  if (range === '6to4') return ipv4From(parts[1]!, parts[2]!);
  if (parts.slice(0, 6).every((part) => part === 0)) return ipv4From(parts[6]!, parts[7]!);
  return null;
}

/**
 * True for an IP address that is not publicly routable. Public means ipaddr.js's 'unicast': in no
 * special-purpose range (IANA registries: loopback, private, link-local, CGNAT, multicast,
 * documentation, benchmarking, reserved, unique-local, Teredo, local-use NAT64 64:ff9b:1::/48, ...).
 * An IPv6 address that carries an IPv4 address (see embeddedIpv4) is judged by that IPv4 address,
 * so [::127.0.0.1], [::ffff:0:127.0.0.1], [2002:7f00:1::1] and [64:ff9b::127.0.0.1] are refused.
 */
export function isPrivateAddress(address: string): boolean {
  const plain = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (isIP(plain) === 0) return false;
  const parsed = ipaddr.parse(plain);
  if (parsed.kind() === 'ipv4') return parsed.range() !== 'unicast';
  const ipv6 = parsed as ipaddr.IPv6;
  const ipv4 = embeddedIpv4(ipv6);
  return (ipv4 ?? ipv6).range() !== 'unicast';
}

function isLocalName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

export interface TargetUrlOptions {
  allowPrivateTargets: boolean;
  /** The field the 400 names (default `url`); links and news banners check their URLs here too. */
  field?: string;
  /** Keep the `#fragment` (a link a browser opens needs it; a webhook request never sends it). */
  keepFragment?: boolean;
}

/** Validates a target URL for storing; the answer is its normalised form. 400 naming `url` (or `field`) otherwise. */
export function parseTargetUrl(value: string, options: TargetUrlOptions): string {
  const field = options.field ?? 'url';
  const invalid = (reason: string) => badRequest(`Invalid ${field}: ${reason}`, field);
  if (value.length > MAX_URL_LENGTH) throw invalid(`at most ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid('not an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid('only http and https URLs are allowed');
  if (url.username || url.password) throw invalid('credentials in the URL are not allowed');
  if (!url.hostname) throw invalid('no host');
  if (!options.allowPrivateTargets && (isPrivateAddress(url.hostname) || isLocalName(url.hostname))) {
    throw invalid(options.field ? 'the address is not public' : 'the address is not public (AUTOMATION_ALLOW_PRIVATE_TARGETS is off)');
  }
  if (!options.keepFragment) url.hash = '';
  const normalised = url.toString();
  if (normalised.length > MAX_URL_LENGTH) throw invalid(`at most ${MAX_URL_LENGTH} characters`);
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
