import type { EntityManager } from '@mikro-orm/postgresql';

/** The PostgreSQL channel on which instances hear that a team's keys, members or groups changed. */
export const AUTH_CHANGES_CHANNEL = 'auth_changes';

/** Drops what an instance remembers of a team's keys. */
export interface AuthCache {
  invalidateTeam(teamId: string): void;
}

/** Queues the announcement in the transaction of `em`; PostgreSQL delivers it on commit. */
export async function announceAuthChange(em: EntityManager, teamId: string): Promise<void> {
  await em.execute(`select pg_notify('${AUTH_CHANGES_CHANNEL}', ?)`, [teamId]);
}
