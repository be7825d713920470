import type { CredentialService } from '../../../domain/users/credential.service.ts';
import type { SessionService } from '../../../domain/sessions/session.service.ts';
import { json, noContent, type Route } from '../../types.ts';
import { requestOrigin, type userRouteBuilder } from './user-route.ts';

/** Answers that carry a session token are never stored by a cache. */
const NO_STORE = { 'Cache-Control': 'no-store' };

/** Email-and-password sign-up and sign-in (public), and sign-out of the current session. */
export function authRoutes(
  route: ReturnType<typeof userRouteBuilder>,
  deps: { credentials: CredentialService; sessions: SessionService; maxJsonBodyBytes: number },
): Route[] {
  return [
    {
      method: 'POST',
      pattern: '/v1/auth/sign-up',
      handler: async (request) => {
        const body = await request.body.json(deps.maxJsonBodyBytes);
        return json(201, await deps.credentials.signUp(body, { method: 'password', ...requestOrigin(request) }), NO_STORE);
      },
    },
    {
      method: 'POST',
      pattern: '/v1/auth/sign-in',
      handler: async (request) => {
        const body = await request.body.json(deps.maxJsonBodyBytes);
        return json(200, await deps.credentials.signIn(body, { method: 'password', ...requestOrigin(request) }), NO_STORE);
      },
    },
    route('POST', '/v1/auth/sign-out', async (call) => {
      await deps.sessions.revoke(call.userId, call.sessionId);
      return noContent();
    }),
  ];
}
