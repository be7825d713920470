import type { MikroORM } from '@mikro-orm/postgresql';
import type { MemberAdminService } from '../members/member-admin.service.ts';
import type { SubscriptionService } from '../subscriptions/subscription.service.ts';
import { subscriptionView } from '../subscriptions/subscription.service.ts';
import type { Actor } from '../actor.ts';
import { planView, teamView } from '../views.ts';
import { Team } from './team.entity.ts';

/** Days of the trial a team that never had a TEAM subscription is offered (`trialDays` of the "me" view). */
export const TRIAL_DAYS = 14;

/**
 * The caller's own view of the team (spec 2.13 "me team info"): its member (TeamMemberInfo; the
 * owner for a key linked to no member, which acts as the owner), the team with its plan, the
 * TEAM subscription, and whether a trial is still open to the team.
 */
export class TeamMeService {
  private readonly orm: MikroORM;
  private readonly members: Pick<MemberAdminService, 'self' | 'get'>;
  private readonly subscriptions: Pick<SubscriptionService, 'teamSubscription' | 'trialEligible'>;

  constructor(options: { orm: MikroORM; members: Pick<MemberAdminService, 'self' | 'get'>; subscriptions: Pick<SubscriptionService, 'teamSubscription' | 'trialEligible'> }) {
    this.orm = options.orm;
    this.members = options.members;
    this.subscriptions = options.subscriptions;
  }

  async me(teamId: string, caller: Actor) {
    const self = await this.members.self(teamId, caller);
    const em = this.orm.em.fork();
    const team = await em.findOneOrFail(Team, { id: teamId }, { populate: ['plan'] });
    const subscription = await this.subscriptions.teamSubscription(em, teamId);
    return {
      member: await this.members.get(teamId, self.id),
      team: { ...teamView(team), plan: team.plan ? planView(team.plan) : null },
      subscription: subscription ? subscriptionView(subscription) : null,
      trialEligible: await this.subscriptions.trialEligible(em, teamId),
      trialDays: TRIAL_DAYS,
    };
  }
}
