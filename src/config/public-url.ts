import type { Config } from './config.ts';

/** Addresses that mean "every interface" to listen on, but nothing to a client that is given them. */
const WILDCARD_HOSTS = new Set(['0.0.0.0', '[::]', '[::0]']);

/**
 * The start-up warning for links no other machine can follow: without PUBLIC_URL, links
 * (publicUrl, signed links) are built from HOST, and HOST=0.0.0.0 makes them http://0.0.0.0:PORT.
 */
export function unreachableLinksWarning(config: Pick<Config, 'publicUrl'>): string | null {
  const host = new URL(config.publicUrl).hostname;
  if (!WILDCARD_HOSTS.has(host)) return null;
  return `Links will use ${config.publicUrl}, an address other machines cannot reach: `
    + 'set PUBLIC_URL to the address clients reach this service at (e.g. PUBLIC_URL=https://media.example.com)';
}
