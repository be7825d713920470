import { randomUUID } from 'node:crypto';
import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { badRequest, notFound } from '../../errors/errors.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import { Plan } from '../plans/plan.entity.ts';
import { LogAction, recordTeamLog } from '../team-logs/team-log.service.ts';
import { effectiveLimits } from '../teams/team-limits.ts';
import { Team } from '../teams/team.entity.ts';
import { User } from '../users/user.entity.ts';
import { isUuid, parseInput, uuid } from '../validation.ts';
import { planView } from '../views.ts';
import { BILLING_CYCLES, SUBSCRIPTION_TYPES, Subscription } from './subscription.entity.ts';

const dateTime = z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time' });
const externalId = z.string().trim().min(1).max(255);

export const setPlanSchema = z.strictObject({
  plan: z.string().min(1).max(32).meta({ description: 'The slug of the plan, such as free or enterprise.' }),
});

/** PUT semantics: the subscription becomes exactly this; fields left out take their defaults. */
export const setSubscriptionSchema = z
  .strictObject({
    type: z.enum(SUBSCRIPTION_TYPES).default('TEAM'),
    plan: z.string().min(1).max(32).optional()
      .meta({ description: 'Slug of the subscribed plan. For a TEAM subscription the team moves to it at once; default: the team\'s current plan.' }),
    priceId: externalId.default('manual'),
    subscriptionId: externalId.optional().meta({ description: 'The payment provider\'s id; default a generated `manual_<uuid>`.' }),
    userId: uuid.optional().meta({ description: 'Who pays; default the team owner\'s user.' }),
    billingCycle: z.enum(BILLING_CYCLES).default('MONTHLY'),
    nextPaymentAt: dateTime.nullable().default(null),
    endsAt: dateTime.nullable().default(null).meta({ description: 'When a canceled subscription ends (default: at canceledAt).' }),
    canceledAt: dateTime.nullable().default(null),
    lastPaymentFailed: z.boolean().default(false),
    isTrialing: z.boolean().default(false),
    trialEndsAt: dateTime.nullable().default(null).meta({ description: 'Required with isTrialing, refused without it.' }),
    pendingPriceId: externalId.nullable().default(null),
    pendingBillingCycle: z.enum(BILLING_CYCLES).nullable().default(null),
  })
  .superRefine((value, context) => {
    if (value.isTrialing && value.trialEndsAt === null) context.addIssue({ code: 'custom', path: ['trialEndsAt'], message: 'is required while isTrialing' });
    if (!value.isTrialing && value.trialEndsAt !== null) context.addIssue({ code: 'custom', path: ['trialEndsAt'], message: 'needs isTrialing' });
    if (value.endsAt !== null && value.canceledAt === null) context.addIssue({ code: 'custom', path: ['endsAt'], message: 'needs canceledAt (only a canceled subscription ends)' });
    if (value.endsAt !== null && value.canceledAt !== null && Date.parse(value.endsAt) < Date.parse(value.canceledAt)) {
      context.addIssue({ code: 'custom', path: ['endsAt'], message: 'must not be before canceledAt' });
    }
  });

function iso(date: Date | null | undefined): string | null {
  return date ? date.toISOString() : null;
}

/** Subscription of spec 2.14. */
export function subscriptionView(subscription: Subscription) {
  return {
    id: subscription.id,
    subscriptionId: subscription.subscriptionId,
    priceId: subscription.priceId,
    userId: subscription.user.id,
    checkedAt: subscription.checkedAt.toISOString(),
    createdAt: subscription.createdAt.toISOString(),
    updatedAt: subscription.updatedAt.toISOString(),
    lastPaymentFailed: subscription.lastPaymentFailed,
    type: subscription.type,
    billingCycle: subscription.billingCycle,
    nextPaymentAt: iso(subscription.nextPaymentAt),
    endsAt: iso(subscription.endsAt),
    canceledAt: iso(subscription.canceledAt),
    pendingPriceId: subscription.pendingPriceId ?? null,
    pendingBillingCycle: subscription.pendingBillingCycle ?? null,
    stripeScheduleId: subscription.stripeScheduleId ?? null,
    teamId: subscription.team?.id ?? null,
    planId: subscription.plan?.id ?? null,
    isTrialing: subscription.isTrialing,
    trialEndsAt: iso(subscription.trialEndsAt),
  };
}

/** The plan a team falls back to when its subscription ends: the default plan (the seeded `free`). */
export async function defaultPlan(em: EntityManager): Promise<Plan> {
  const plan = await em.findOne(Plan, { isDefault: true }, { orderBy: [{ position: 'asc' }, { slug: 'asc' }] });
  return plan ?? (await em.findOneOrFail(Plan, { slug: 'free' }));
}

async function planBySlug(em: EntityManager, slug: string): Promise<Plan> {
  const plan = await em.findOne(Plan, { slug });
  if (!plan) throw badRequest(`Unknown plan: ${slug}`, slug);
  return plan;
}

async function lockTeam(em: EntityManager, teamId: string): Promise<Team> {
  const team = isUuid(teamId) ? await em.findOne(Team, { id: teamId }, { lockMode: LockMode.PESSIMISTIC_WRITE }) : null;
  if (!team) throw notFound('team', teamId);
  await em.populate(team, ['plan']);
  return team;
}

/**
 * A team's plan and subscriptions (spec 2.12, 2.14): read by the team, set by the operator as
 * data. Moving a team to another plan updates team.plan_id, whose trigger NOTIFYs team_limits,
 * so every instance's limits cache drops the team on commit.
 */
export class SubscriptionService {
  private readonly orm: MikroORM;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  /** The team's plan, its overrides, the effective limits (null is unlimited) and its TEAM subscription. */
  async teamPlan(teamId: string, em: EntityManager = this.orm.em.fork()) {
    const team = isUuid(teamId) ? await em.findOne(Team, { id: teamId }, { populate: ['plan'] }) : null;
    if (!team) throw notFound('team', teamId);
    const subscription = await em.findOne(Subscription, { team, type: 'TEAM' }, { populate: ['user', 'plan'] });
    return {
      plan: team.plan ? planView(team.plan) : null,
      overrides: team.limitOverrides,
      limits: effectiveLimits(team.plan?.limits, team.limitOverrides),
      subscription: subscription ? subscriptionView(subscription) : null,
    };
  }

  /** Every subscription of the team (TEAM first, then VOICE). */
  async list(teamId: string) {
    const subscriptions = await this.orm.em.fork().find(Subscription, { team: teamId }, { populate: ['user', 'plan'], orderBy: { type: 'asc' } });
    return subscriptions.map(subscriptionView);
  }

  /** The TEAM subscription, or null. */
  async teamSubscription(em: EntityManager, teamId: string): Promise<Subscription | null> {
    return em.findOne(Subscription, { team: teamId, type: 'TEAM' }, { populate: ['user', 'plan'] });
  }

  /** Whether the team never had a TEAM subscription (rows are kept when they end, so a trial is had once). */
  async trialEligible(em: EntityManager, teamId: string): Promise<boolean> {
    return (await em.count(Subscription, { team: teamId, type: 'TEAM' })) === 0;
  }

  /** Operator: moves the team to a plan (TEAM_UPDATED `{plan: {from, to}}`); answers the team's plan view. */
  async setPlan(teamId: string, input: unknown) {
    const { plan: slug } = parseInput(setPlanSchema, input);
    return this.orm.em.fork().transactional(async (em) => {
      const team = await lockTeam(em, teamId);
      this.movePlan(em, team, await planBySlug(em, slug), { by: 'operator' });
      await em.flush();
      return this.teamPlan(teamId, em);
    });
  }

  /** Operator: the team's subscription of a type becomes exactly the body (created or replaced; an ended one starts over). */
  async setSubscription(teamId: string, input: unknown) {
    const data = parseInput(setSubscriptionSchema, input);
    return this.orm.em.fork().transactional(async (em) => {
      const team = await lockTeam(em, teamId);
      const plan = data.plan ? await planBySlug(em, data.plan) : (team.plan ?? null);
      const user = data.userId
        ? await em.findOne(User, { id: data.userId })
        : (await em.findOne(TeamMember, { team, isTeamOwner: true }, { populate: ['user'] }))?.user;
      if (!user) throw notFound('user', data.userId);
      const date = (value: string | null) => (value === null ? null : new Date(value));
      const fields = {
        plan,
        user,
        priceId: data.priceId,
        billingCycle: data.billingCycle,
        nextPaymentAt: date(data.nextPaymentAt),
        endsAt: date(data.endsAt),
        canceledAt: date(data.canceledAt),
        lastPaymentFailed: data.lastPaymentFailed,
        isTrialing: data.isTrialing,
        trialEndsAt: date(data.trialEndsAt),
        pendingPriceId: data.pendingPriceId,
        pendingBillingCycle: data.pendingBillingCycle,
        checkedAt: new Date(),
        endedAt: null,
      };
      let subscription = await em.findOne(Subscription, { team, type: data.type }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if (subscription) {
        em.assign(subscription, { ...fields, ...(data.subscriptionId && { subscriptionId: data.subscriptionId }) });
      } else {
        subscription = em.create(Subscription, { ...fields, team, type: data.type, subscriptionId: data.subscriptionId ?? `manual_${randomUUID()}` });
      }
      recordTeamLog(em, {
        teamId: team.id,
        action: LogAction.teamUpdated,
        data: { subscription: { type: data.type, planId: plan?.id ?? null, isTrialing: data.isTrialing, canceledAt: data.canceledAt, endsAt: data.endsAt } },
      });
      if (data.type === 'TEAM' && plan) this.movePlan(em, team, plan, { by: 'operator' });
      await em.flush();
      return subscriptionView(subscription);
    });
  }

  /** Points the team at `plan` and logs it (TEAM_UPDATED, no member: the operator or the subscription job); nothing when it is already there. */
  movePlan(em: EntityManager, team: Team, plan: Plan, why: Record<string, unknown>): void {
    const from = team.plan?.id ?? null;
    if (from === plan.id) return;
    team.plan = plan;
    recordTeamLog(em, { teamId: team.id, action: LogAction.teamUpdated, data: { plan: { from, to: plan.id, slug: plan.slug }, ...why } });
  }
}
