import { z } from 'zod';
import { booleanLimitKeys, defaultPlanLimits, type PlanLimitKey, type PlanLimits } from '../plans/plan-limits.ts';

const numericLimit = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullable();

function limitSchema(key: PlanLimitKey): z.ZodType {
  if ((booleanLimitKeys as readonly string[]).includes(key)) return z.boolean();
  if (key === 'customerDiscordRoleId') return z.string().max(64);
  return numericLimit;
}

const limitKeys = Object.keys(defaultPlanLimits) as PlanLimitKey[];

/** Any subset of PlanLimits; numbers are whole and not negative, null means unlimited. */
export const limitsPatchSchema = z.strictObject(
  Object.fromEntries(limitKeys.map((key) => [key, limitSchema(key).optional()])),
) as unknown as z.ZodType<Partial<PlanLimits>>;

/** A team's limits: its plan's, with the team's own overrides on top. */
export function effectiveLimits(planLimits: PlanLimits | null | undefined, overrides: Partial<PlanLimits>): PlanLimits {
  return { ...defaultPlanLimits, ...planLimits, ...overrides };
}
