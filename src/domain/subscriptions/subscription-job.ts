import { LockMode } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { JobRunner } from '../../jobs/job-runner.ts';
import { JOBS } from '../../jobs/jobs.ts';
import { LogAction, recordTeamLog } from '../team-logs/team-log.service.ts';
import { Team } from '../teams/team.entity.ts';
import { Subscription } from './subscription.entity.ts';
import { defaultPlan, type SubscriptionService } from './subscription.service.ts';

/**
 * The rules of spec 2.14's fields, applied every minute, once across instances:
 * - a canceled subscription ends at `endsAt` (at `canceledAt` when it has no `endsAt`);
 * - a trial ends at `trialEndsAt`: `isTrialing` becomes false and, unless it goes on as a paid
 *   subscription (a `nextPaymentAt` and not canceled), the subscription ends there too.
 * When a TEAM subscription ends, the team falls back to the default plan (TEAM_UPDATED with the
 * plan change and `subscriptionEnded`); `endedAt` records that it was applied, so never twice.
 *
 * Once per minute across instances (JOBS.subscriptionRules in src/jobs/jobs.ts, as the folder rule sweep per hour). Each subscription is handled in its own transaction with its row locked
 * and its condition read again, so a subscription changed meanwhile is judged as it is now.
 */

const JOB = JOBS.subscriptionRules;
const BATCH_SIZE = 200;
/** Slots of this job older than this are pruned from job_run by each run. */
const KEEP_SLOTS_MS = 86_400_000;

export type EndReason = 'canceled' | 'trialEnded';

export interface SubscriptionJobResult {
  /** False when another instance holds the lock or already ran this minute. */
  ran: boolean;
  /** Subscriptions ended (team back on the default plan for TEAM ones). */
  ended: number;
  /** Trials that went on as paid subscriptions. */
  converted: number;
}

export interface SubscriptionJobOptions {
  orm: MikroORM;
  subscriptions: Pick<SubscriptionService, 'movePlan'>;
  logger: Pick<Logger, 'info' | 'error'>;
}

const DUE = `ended_at is null and ((canceled_at is not null and coalesce(ends_at, canceled_at) <= ?::timestamptz) or (is_trialing and trial_ends_at <= ?::timestamptz))`;

export class SubscriptionJob {
  private readonly options: SubscriptionJobOptions;
  private readonly runner: JobRunner<{ ended: number; converted: number }>;

  constructor(options: SubscriptionJobOptions) {
    this.options = options;
    this.runner = new JobRunner(JOB, {
      orm: options.orm,
      work: (now, slot) => this.applyAndPrune(now, slot!),
      onError: (error) => options.logger.error({ err: error, job: JOB.name }, 'subscription job failed'),
    });
  }

  /** Fires a second after every interval boundary (the minute); never keeps the process alive. */
  start(intervalMs?: number): void {
    this.runner.start(intervalMs);
  }

  stop(): Promise<void> {
    return this.runner.stop();
  }

  /** One run for the minute of `now`, if this instance wins it. */
  async runOnce(now = new Date()): Promise<SubscriptionJobResult> {
    const run = await this.runner.runOnce(now);
    return run.ran ? { ran: true, ...run.result } : { ran: false, ended: 0, converted: 0 };
  }

  private async applyAndPrune(now: Date, slot: Date): Promise<{ ended: number; converted: number }> {
    const result = await this.apply(now);
    await this.options.orm.em.fork().execute('delete from job_run where job = ? and slot < ?', [JOB.name, new Date(now.getTime() - KEEP_SLOTS_MS)]);
    if (result.ended + result.converted > 0) this.options.logger.info({ job: JOB.name, slot, ...result }, 'subscription rules applied');
    return result;
  }

  private async apply(now: Date): Promise<{ ended: number; converted: number }> {
    let ended = 0;
    let converted = 0;
    let after = '00000000-0000-0000-0000-000000000000';
    for (;;) {
      const due = await this.options.orm.em.fork().execute<{ id: string }[]>(
        `select id from subscription where ${DUE} and id > ? order by id limit ?`,
        [now, now, after, BATCH_SIZE],
      );
      for (const { id } of due) {
        const outcome = await this.applyOne(id, now);
        if (outcome === 'ended') ended++;
        if (outcome === 'converted') converted++;
      }
      if (due.length < BATCH_SIZE) return { ended, converted };
      after = due.at(-1)!.id;
    }
  }

  private async applyOne(id: string, now: Date): Promise<'ended' | 'converted' | 'none'> {
    return this.options.orm.em.fork().transactional(async (em) => {
      // Team row first, then the subscription: the order the operator's setSubscription locks them in.
      const [row] = await em.execute<{ team_id: string | null }[]>('select team_id from subscription where id = ?', [id]);
      const team = row?.team_id ? await em.findOne(Team, { id: row.team_id }, { lockMode: LockMode.PESSIMISTIC_WRITE }) : null;
      const subscription = await em.findOne(Subscription, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if (!subscription || subscription.endedAt) return 'none';
      const cancelDue = subscription.canceledAt !== null && subscription.canceledAt !== undefined && (subscription.endsAt ?? subscription.canceledAt) <= now;
      const trialDue = subscription.isTrialing && subscription.trialEndsAt !== null && subscription.trialEndsAt !== undefined && subscription.trialEndsAt <= now;
      if (!cancelDue && !trialDue) return 'none';
      const teamId = subscription.team?.id ?? null;
      if (trialDue) subscription.isTrialing = false;
      const goesOn = !cancelDue && subscription.nextPaymentAt && !subscription.canceledAt;
      if (goesOn) {
        if (teamId) recordTeamLog(em, { teamId, action: LogAction.teamUpdated, data: { subscription: { type: subscription.type, trialEnded: true } } });
        await em.flush();
        return 'converted';
      }
      const reason: EndReason = cancelDue ? 'canceled' : 'trialEnded';
      subscription.endedAt = now;
      if (teamId) {
        recordTeamLog(em, { teamId, action: LogAction.teamUpdated, data: { subscriptionEnded: { type: subscription.type, reason } } });
        if (subscription.type === 'TEAM' && team) {
          await em.populate(team, ['plan']);
          this.options.subscriptions.movePlan(em, team, await defaultPlan(em), { subscriptionEnded: reason });
        }
      }
      await em.flush();
      return 'ended';
    });
  }
}
