import type { MikroORM } from '@mikro-orm/postgresql';
import { initOrm, migrate } from '../db/orm.ts';
import { entities } from '../domain/entities.ts';
import { seedPlans } from '../domain/plans/seed-plans.ts';
import type { Logger } from '../logging/logger.ts';

/** The ORM over the domain's entities, with the schema brought up to date and the contract's plans seeded. */
export async function openDomainDatabase(options: { databaseUrl: string; poolSize: number; logger?: Logger }): Promise<MikroORM> {
  const orm = await initOrm({ ...options, entities });
  try {
    await migrate(orm);
    await seedPlans(orm);
  } catch (error) {
    await orm.close().catch(() => undefined);
    throw error;
  }
  return orm;
}
