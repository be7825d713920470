import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import parseForwarded from 'forwarded-parse';
import proxyAddr from 'proxy-addr';

/** Whether the hop at `address` is one of TRUSTED_PROXIES (proxy-addr's compiled rule). */
export type TrustedProxies = (address: string, hop: number) => boolean;

/** Compiles TRUSTED_PROXIES (parsed addresses and CIDR ranges); null when empty, so that forwarding headers are ignored. */
export function compileTrustedProxies(list: readonly string[]): TrustedProxies | null {
  return list.length === 0 ? null : proxyAddr.compile([...list]);
}

/** The address a request is from, and whether it names a proxy between the client and us. */
export interface ClientAddress {
  address: string;
  /** A forwarding header was sent (trusted or not): whoever connected is relaying someone else. */
  viaProxy: boolean;
}

/**
 * The client of a request that reached us from `peer` (the socket's address): for a connection
 * from a trusted proxy, the first address right to left in `X-Forwarded-For` (or, when that is
 * absent, RFC 7239 `Forwarded`) that is not itself a trusted proxy; the peer otherwise.
 *
 * X-Forwarded-For wins when both are sent: it is what nginx, HAProxy, Caddy, Traefik and the
 * cloud load balancers set, and a proxy that sets one header passes the other through as the
 * client wrote it, so the common header is the one a client cannot forge behind common proxies.
 */
export function clientAddress(peer: string, fields: ReadonlyArray<readonly [string, string]>, trusted: TrustedProxies | null): ClientAddress {
  const xForwardedFor: string[] = [];
  const forwarded: string[] = [];
  for (const [name, value] of fields) {
    if (name === 'x-forwarded-for') xForwardedFor.push(value);
    else if (name === 'forwarded') forwarded.push(value);
  }
  const viaProxy = xForwardedFor.length > 0 || forwarded.length > 0;
  if (trusted === null || !viaProxy) return { address: peer, viaProxy };
  // A header sent several times is one list (RFC 9110 5.3), in the order the fields came.
  const hops = xForwardedFor.length > 0 ? xForwardedFor.join(', ') : forwardedFor(forwarded.join(', '));
  if (hops === null) return { address: peer, viaProxy };
  const chain = proxyAddr.all(asProxyAddrRequest(peer, hops), trusted);
  // proxy-addr walks right to left past trusted hops: the last address it returns is the client,
  // the one before it the proxy that reported it (taken instead of a hop that is no address).
  const client = chain.at(-1)!;
  return { address: isIP(client) !== 0 ? client : chain.at(-2)!, viaProxy };
}

/** The `for=` hops of a Forwarded header as an X-Forwarded-For list (ports and brackets dropped); null when it does not parse. */
function forwardedFor(header: string): string | null {
  let elements: Record<string, string>[];
  try {
    elements = parseForwarded(header);
  } catch {
    return null;
  }
  return elements.map((element) => nodeAddress(element['for'] ?? 'unknown')).join(', ');
}

/** `[2001:db8::1]:4711` -> `2001:db8::1`, `192.0.2.43:47011` -> `192.0.2.43`; obfuscated names and `unknown` stay as they are. */
function nodeAddress(node: string): string {
  if (node.startsWith('[')) return node.slice(1, node.indexOf(']') === -1 ? undefined : node.indexOf(']'));
  const colon = node.indexOf(':');
  return colon !== -1 && colon === node.lastIndexOf(':') ? node.slice(0, colon) : node;
}

/** proxy-addr reads a request's socket address and X-Forwarded-For header, and nothing else of it. */
function asProxyAddrRequest(peer: string, xForwardedFor: string): IncomingMessage {
  return { socket: { remoteAddress: peer }, headers: { 'x-forwarded-for': xForwardedFor } } as unknown as IncomingMessage;
}
