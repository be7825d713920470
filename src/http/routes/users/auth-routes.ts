import type { ApiKeyAdminService } from '../../../domain/api-keys/api-key-admin.service.ts';
import type { CredentialService } from '../../../domain/users/credential.service.ts';
import type { SessionService } from '../../../domain/sessions/session.service.ts';
import { json, noContent, type Route } from '../../types.ts';
import { keyRouteBuilder, publicRouteBuilder, userRouteBuilder, type UserRouteDeps } from '../route-builder.ts';
import { requestOrigin } from './request-origin.ts';

/** Answers that carry a session token are never stored by a cache. */
const NO_STORE = { 'Cache-Control': 'no-store' };

export interface AuthRouteDeps extends UserRouteDeps {
  credentials: CredentialService;
  sessions: SessionService;
  apiKeyAdmin: ApiKeyAdminService;
  maxJsonBodyBytes: number;
}

/** Email-and-password sign-up and sign-in (public), sign-out of the current session, and what a team API key is (its team, its permissions). */
export function authRoutes(deps: AuthRouteDeps): Route[] {
  const route = userRouteBuilder(deps, deps.maxJsonBodyBytes);
  const publicRoute = publicRouteBuilder(deps.maxJsonBodyBytes);
  const keyRoute = keyRouteBuilder(deps, deps.maxJsonBodyBytes);
  return [
    publicRoute('POST', '/v1/auth/sign-up', async ({ request, body }) =>
      json(201, await deps.credentials.signUp(await body(), { method: 'password', ...requestOrigin(request) }), NO_STORE)),
    publicRoute('POST', '/v1/auth/sign-in', async ({ request, body }) =>
      json(200, await deps.credentials.signIn(await body(), { method: 'password', ...requestOrigin(request) }), NO_STORE)),
    route('POST', '/v1/auth/sign-out', async (call) => {
      await deps.sessions.revoke(call.userId, call.sessionId);
      return noContent();
    }),
    keyRoute('GET', '/v1/auth/key', async (call) => json(200, await deps.apiKeyAdmin.describe(call.principal))),
  ];
}
