import type { CredentialService } from '../../../domain/users/credential.service.ts';
import type { SessionService } from '../../../domain/sessions/session.service.ts';
import type { VerificationService } from '../../../domain/verification/verification.service.ts';
import type { UserProfileService } from '../../../domain/users/user-profile.service.ts';
import type { NotificationPreferenceService } from '../../../domain/notifications/notification-preference.service.ts';
import { json, noContent, type Route } from '../../types.ts';
import { userRouteBuilder, type UserRouteDeps } from '../route-builder.ts';
import { requestOrigin } from './request-origin.ts';

export interface UserAccountRouteDeps extends UserRouteDeps {
  profiles: UserProfileService;
  credentials: CredentialService;
  sessions: SessionService;
  notificationPreferences: NotificationPreferenceService;
  verification: VerificationService;
  maxJsonBodyBytes: number;
}

/** The signed-in user's own record, password, sessions and teams. */
export function userRoutes(deps: UserAccountRouteDeps): Route[] {
  const route = userRouteBuilder(deps, deps.maxJsonBodyBytes);
  return [
    route('GET', '/v1/users/me', async (call) => json(200, await deps.verification.userWithProgress(await deps.profiles.get(call.userId), call.userId))),
    route('PATCH', '/v1/users/me', async (call) => json(200, await deps.profiles.update(call.userId, await call.body()))),
    route('POST', '/v1/users/me/password', async (call) => {
      const issued = await deps.credentials.changePassword(call.userId, await call.body(), { method: 'password', ...requestOrigin(call.request) });
      return json(200, issued, { 'Cache-Control': 'no-store' });
    }),
    route('GET', '/v1/users/me/notification-settings', async (call) => json(200, await deps.notificationPreferences.get(call.userId))),
    route('PUT', '/v1/users/me/notification-settings', async (call) => json(200, await deps.notificationPreferences.update(call.userId, await call.body()))),
    route('GET', '/v1/users/me/teams', async (call) => json(200, await deps.profiles.teams(call.userId))),
    route('GET', '/v1/users/me/sessions', async (call) => json(200, await deps.sessions.list(call.userId, call.sessionId))),
    route('DELETE', '/v1/users/me/sessions', async (call) => json(200, { revoked: await deps.sessions.revokeOthers(call.userId, call.sessionId) })),
    route('DELETE', '/v1/users/me/sessions/:sessionId', async (call) => {
      await deps.sessions.revoke(call.userId, call.param('sessionId'));
      return noContent();
    }),
  ];
}
