import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * The PostgreSQL channel that wakes every instance's dispatcher: the outbox
 * trigger notifies on it when events are written (migration
 * Migration20261121060000Automations), and the service when a change makes
 * deliveries due (a retry, a target enabled again).
 */
export const AUTOMATION_EVENTS_CHANNEL = 'automation_events';

/** Queues the wake-up in the transaction of `em`; PostgreSQL delivers it on commit. */
export async function announceAutomationWork(em: EntityManager): Promise<void> {
  await em.execute(`select pg_notify('${AUTOMATION_EVENTS_CHANNEL}', '')`);
}
