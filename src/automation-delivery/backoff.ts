/**
 * Delay before attempt `attempt + 1` after `attempt` failed attempts:
 * exponential (base, 2 base, 4 base, ... capped at max) with "equal jitter":
 * half the delay is fixed, the other half random, so a receiver that comes back
 * is not hit by every queued target at the same instant, and no retry comes
 * sooner than half its nominal delay.
 */
export function backoffDelayMs(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const exponent = Math.max(0, attempt - 1);
  const nominal = Math.min(maxMs, baseMs * 2 ** Math.min(exponent, 52));
  const half = nominal / 2;
  return Math.round(half + random() * half);
}

/**
 * The wait a receiver asked for with `Retry-After` (seconds, or an HTTP date),
 * in milliseconds; null when absent or unreadable.
 */
export function retryAfterMs(header: string | undefined, now = Date.now()): number | null {
  if (!header) return null;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}
