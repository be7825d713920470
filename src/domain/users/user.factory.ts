import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { User } from './user.entity.ts';

/**
 * Members created through the operator routes get a placeholder user until a
 * person links an account: a unique generated username and an address in the
 * reserved `.invalid` domain, which can never receive mail.
 */
export function createPlaceholderUser(em: EntityManager): User {
  const username = `u_${randomBytes(8).toString('hex')}`;
  return em.create(User, { username, email: `${username}@users.invalid`, permissions: [] });
}
