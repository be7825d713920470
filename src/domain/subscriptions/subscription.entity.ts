import { defineEntity, p } from '@mikro-orm/core';
import { BaseSchema } from '../base.entity.ts';
import { Plan } from '../plans/plan.entity.ts';
import { Team } from '../teams/team.entity.ts';
import { User } from '../users/user.entity.ts';

export const SUBSCRIPTION_TYPES = ['TEAM', 'VOICE'] as const;
export const BILLING_CYCLES = ['MONTHLY', 'YEARLY'] as const;
export type SubscriptionType = (typeof SUBSCRIPTION_TYPES)[number];
export type BillingCycle = (typeof BILLING_CYCLES)[number];

/**
 * Subscription of spec 2.14, kept as data (no payment provider): at most one per team and type.
 * `endedAt` is ours, not the spec's: when the subscription job applied the end (team back on the
 * default plan), so it is applied once.
 */
export const SubscriptionSchema = defineEntity({
  name: 'Subscription',
  extends: BaseSchema,
  uniques: [{ name: 'subscription_team_type_unique', properties: ['team', 'type'] }],
  properties: {
    subscriptionId: p.string().length(255),
    priceId: p.string().length(255),
    user: () => p.manyToOne(User).deleteRule('cascade').index(),
    checkedAt: p.datetime(),
    lastPaymentFailed: p.boolean().default(false),
    type: p.string().length(8).$type<SubscriptionType>().default('TEAM'),
    billingCycle: p.string().length(8).$type<BillingCycle>().default('MONTHLY'),
    nextPaymentAt: p.datetime().nullable(),
    endsAt: p.datetime().nullable(),
    canceledAt: p.datetime().nullable(),
    pendingPriceId: p.string().length(255).nullable(),
    pendingBillingCycle: p.string().length(8).$type<BillingCycle>().nullable(),
    stripeScheduleId: p.string().length(255).nullable(),
    team: () => p.manyToOne(Team).nullable().deleteRule('cascade'),
    plan: () => p.manyToOne(Plan).nullable().deleteRule('set null'),
    isTrialing: p.boolean().default(false),
    trialEndsAt: p.datetime().nullable(),
    endedAt: p.datetime().nullable(),
  },
});

export class Subscription extends SubscriptionSchema.class {}
SubscriptionSchema.setClass(Subscription);
