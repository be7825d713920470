/** CORS_ORIGINS after parsing: any origin, a list of exact origins, or none (CORS off). */
export type CorsOrigins = '*' | readonly string[];

/**
 * Parses CORS_ORIGINS: `*`, or a comma-separated list of origins (`scheme://host[:port]`,
 * no path); empty turns CORS off. Throws with the offending entry.
 */
export function parseCorsOrigins(value: string): CorsOrigins {
  const entries = value.split(',').map((entry) => entry.trim()).filter((entry) => entry.length > 0);
  if (entries.length === 1 && entries[0] === '*') return '*';
  for (const entry of entries) {
    if (!isOrigin(entry)) throw new Error(`"${entry}" is not an origin (scheme://host[:port], or * alone)`);
  }
  // Origins compare as browsers send them: lower case, no trailing slash.
  return entries.map((entry) => entry.replace(/\/$/, '').toLowerCase());
}

function isOrigin(entry: string): boolean {
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return false;
  }
  // URL.origin is 'null' for schemes it does not know the origin of; compare the text instead.
  return /^[a-z][a-z0-9+.-]*:$/i.test(url.protocol) && url.host !== '' && entry.replace(/\/$/, '').toLowerCase() === `${url.protocol}//${url.host}`.toLowerCase();
}
