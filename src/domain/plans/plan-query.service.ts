import type { MikroORM } from '@mikro-orm/postgresql';
import { planView } from '../views.ts';
import { Plan } from './plan.entity.ts';

/** Plans as clients read them (spec 2.12): the public list. A team's plan is SubscriptionService.teamPlan. */
export class PlanQueryService {
  private readonly orm: MikroORM;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  /** The public plans by position, with their limits and prices. */
  async listPublic() {
    const plans = await this.orm.em.fork().find(Plan, { isPublic: true }, { orderBy: [{ position: 'asc' }, { level: 'asc' }, { slug: 'asc' }] });
    return plans.map(planView);
  }
}
