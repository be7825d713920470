import type { MikroORM } from '@mikro-orm/postgresql';
import { ConfigError } from '../../config/config.ts';
import { Plan } from './plan.entity.ts';

/**
 * DEFAULT_PLAN must name a plan of the database. Plans live there (seeded, then changed by operators),
 * so this runs at start-up once the plans are seeded: a slug that names none stops start-up, listing them.
 */
export async function checkDefaultPlan(orm: MikroORM, slug: string): Promise<void> {
  const plans = await orm.em.fork().find(Plan, {}, { fields: ['slug'], orderBy: [{ level: 'asc' }, { slug: 'asc' }] });
  if (plans.some((plan) => plan.slug === slug)) return;
  throw new ConfigError(
    `Invalid configuration: DEFAULT_PLAN must name an existing plan (got ${JSON.stringify(slug)}; the plans are ${plans.map((plan) => plan.slug).join(', ')})`,
  );
}
