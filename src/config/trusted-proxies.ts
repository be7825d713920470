import { isIP } from 'node:net';

/**
 * Parses TRUSTED_PROXIES: a comma-separated list of IP addresses and CIDR ranges (such as
 * `127.0.0.1, 10.0.0.0/8, ::1`); empty means none. Throws on an entry that is neither.
 */
export function parseTrustedProxies(value: string): string[] {
  const entries = value.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  for (const entry of entries) {
    if (!isAddressOrRange(entry)) throw new Error(`not an IP address or CIDR range: ${entry}`);
  }
  return entries;
}

function isAddressOrRange(entry: string): boolean {
  const [address = '', bits, ...rest] = entry.split('/');
  const version = isIP(address);
  if (version === 0 || rest.length > 0) return false;
  return bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (version === 4 ? 32 : 128));
}
