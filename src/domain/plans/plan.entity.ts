import { defineEntity, p } from '@mikro-orm/core';
import { BaseSchema } from '../base.entity.ts';
import type { PlanLimits } from './plan-limits.ts';

export const PlanSchema = defineEntity({
  name: 'Plan',
  extends: BaseSchema,
  properties: {
    name: p.string().length(64),
    slug: p.string().length(32).unique(),
    color: p.string().length(16).default('#808080'),
    level: p.integer().default(0),
    monthlyPriceIds: p.array().default([]),
    yearlyPriceIds: p.array().default([]),
    monthlyPrice: p.integer().default(0),
    yearlyPrice: p.integer().default(0),
    isPublic: p.boolean().default(true),
    isDefault: p.boolean().default(false),
    position: p.integer().default(0),
    limits: p.json<PlanLimits>(),
  },
});

export class Plan extends PlanSchema.class {}
PlanSchema.setClass(Plan);
