import { randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Plan } from './plan.entity.ts';
import { defaultPlanLimits, MB, type PlanLimits } from './plan-limits.ts';

const TiB_IN_KiB = 1024 ** 3;

interface PlanSeed {
  slug: string;
  name: string;
  level: number;
  position: number;
  isDefault: boolean;
  limits: PlanLimits;
}

/** The plans of the operator contract. */
export const seededPlans: PlanSeed[] = [
  { slug: 'free', name: 'Free', level: 0, position: 0, isDefault: true, limits: defaultPlanLimits },
  {
    slug: 'enterprise',
    name: 'Enterprise',
    level: 100,
    position: 100,
    isDefault: false,
    limits: { ...defaultPlanLimits, maxMediaFileSize: 250 * MB, maxTeamStorage: TiB_IN_KiB },
  },
];

/** Inserts the contract's plans that do not exist yet; existing plans are left as operators changed them. */
export async function seedPlans(orm: MikroORM): Promise<void> {
  const em = orm.em.fork();
  const now = new Date();
  for (const seed of seededPlans) {
    await em
      .createQueryBuilder(Plan)
      .insert({ ...seed, id: randomUUID(), createdAt: now, updatedAt: now })
      .onConflict('slug')
      .ignore()
      .execute();
  }
}
