import type { EntityManager } from '@mikro-orm/postgresql';

/** The PostgreSQL channel on which instances hear that a team's keys, members or groups changed. */
export const AUTH_CHANGES_CHANNEL = 'auth_changes';

/** Drops what an instance remembers of a team's keys and members. */
export interface AuthCache {
  invalidateTeam(teamId: string): void;
}

/** A user's sessions, password or disabled flag changed: the payload names the user, not a team. */
const USER_PAYLOAD_PREFIX = 'user:';

/** Queues the announcement in the transaction of `em`; PostgreSQL delivers it on commit. */
export async function announceAuthChange(em: EntityManager, teamId: string): Promise<void> {
  await em.execute(`select pg_notify('${AUTH_CHANGES_CHANNEL}', ?)`, [teamId]);
}

/** Queues, in the transaction of `em`, the announcement that a user's sessions must be looked up again. */
export async function announceUserAuthChange(em: EntityManager, userId: string): Promise<void> {
  await em.execute(`select pg_notify('${AUTH_CHANGES_CHANNEL}', ?)`, [`${USER_PAYLOAD_PREFIX}${userId}`]);
}

/** Which cache entries a notification on AUTH_CHANGES_CHANNEL drops. */
export function parseAuthChange(payload: string): { userId: string } | { teamId: string } {
  return payload.startsWith(USER_PAYLOAD_PREFIX) ? { userId: payload.slice(USER_PAYLOAD_PREFIX.length) } : { teamId: payload };
}
