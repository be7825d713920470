import { timingSafeEqual } from 'node:crypto';
import type { ApiKeyAuthenticator } from '../auth/api-key-authenticator.ts';
import type { Principal } from '../auth/principal.ts';
import type { PermissionName, ScopeName } from '../auth/permissions.ts';
import { forbidden, unauthorized } from '../errors/errors.ts';
import type { HttpRequest } from './types.ts';

/** The `authSecret` header of the operator routes, compared in constant time. */
export function requireOperator(request: HttpRequest, authSecret: string): void {
  const presented = Buffer.from(request.headers['authsecret'] ?? '');
  const expected = Buffer.from(authSecret);
  if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
    throw unauthorized('Missing or invalid authSecret header');
  }
}

export interface MediaAccess {
  permission: PermissionName;
  /** The scope that lets a narrowed key reach this route; routes without one need a full key. */
  scope?: ScopeName;
}

/**
 * Spec section 5: a key of another team is 401, as if it did not exist; a
 * missing member permission or key scope is 403.
 */
export async function authorizeMedia(request: HttpRequest, authenticator: ApiKeyAuthenticator, access: MediaAccess): Promise<Principal> {
  const principal = await authenticator.authenticate(request.headers['authorization']);
  if (principal.teamId !== request.params['teamId']) throw unauthorized('The API key does not belong to this team');
  if (principal.scopes.length > 0 && !(access.scope && principal.scopes.includes(access.scope))) {
    throw forbidden('The API key lacks the scope for this route', access.scope);
  }
  if (!principal.permissions.has(access.permission)) {
    throw forbidden(`Missing permission ${access.permission}`, access.permission);
  }
  return principal;
}
