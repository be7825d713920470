import { z } from 'zod';

/** The furthest ahead an expiry may lie: ten years, so that a typo in the year is refused rather than kept forever. */
const MAX_AHEAD_MS = 10 * 365 * 24 * 3600 * 1000;

/** An ISO 8601 date-time with offset, in the future and at most ten years ahead (expiresAt of penalty points and access assignments). */
export const futureTimestamp = z.iso.datetime({ offset: true })
  .refine((value) => Date.parse(value) > Date.now(), 'must be in the future')
  .refine((value) => Date.parse(value) <= Date.now() + MAX_AHEAD_MS, 'must be at most ten years ahead');
