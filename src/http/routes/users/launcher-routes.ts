import type { Authenticator } from '../../../auth/authenticator.ts';
import { checkCredential, type FailureThrottle } from '../../../auth/failure-throttle.ts';
import type { LauncherCodeService } from '../../../domain/launcher/launcher-code.service.ts';
import { json, type Route } from '../../types.ts';
import { publicRouteBuilder, userRouteBuilder, type UserRouteDeps } from '../route-builder.ts';
import { requestOrigin } from './request-origin.ts';

export interface LauncherRouteDeps extends UserRouteDeps {
  launcherCodes: LauncherCodeService;
  authenticator: Authenticator;
  /** Failed exchanges count here per client address, with failed authentications. */
  authFailures: FailureThrottle;
  maxJsonBodyBytes: number;
}

/**
 * Launcher sign-in (docs/accounts.md#launcher-sign-in): start a code (anyone; with a session token
 * it is approved at once), approve it (the signed-in user), exchange it with the PKCE verifier.
 * Failed exchanges count against the client's address like failed authentications.
 */
export function launcherRoutes(deps: LauncherRouteDeps): Route[] {
  const route = userRouteBuilder(deps, deps.maxJsonBodyBytes);
  const publicRoute = publicRouteBuilder(deps.maxJsonBodyBytes);
  return [
    publicRoute('POST', '/v1/auth/launcher/codes', async ({ request, body }) => {
      const authorization = request.headers['authorization'];
      // A signed-in launcher is served whatever its address's budget; an anonymous one from a guessing address is not.
      if (!authorization) await deps.authFailures.refuseIfExhausted(request.remoteAddress);
      const approvedBy = authorization ? (await deps.authenticator.identifyUser(authorization, request.remoteAddress)).userId : null;
      return json(201, await deps.launcherCodes.start(await body(), approvedBy), { 'Cache-Control': 'no-store' });
    }),
    route('GET', '/v1/auth/launcher/codes/:code', async (call) => json(200, await deps.launcherCodes.describe(call.param('code')))),
    route('POST', '/v1/auth/launcher/codes/:code/approve', async (call) => json(200, await deps.launcherCodes.approve(call.param('code'), call.userId))),
    publicRoute('POST', '/v1/auth/launcher/token', async ({ request, body }) => {
      const issued = await checkCredential(deps.authFailures, request.remoteAddress, (error) => error.status === 400, async () =>
        deps.launcherCodes.exchange(await body(), { method: 'launcher', ...requestOrigin(request) }));
      return json(200, issued, { 'Cache-Control': 'no-store' });
    }),
  ];
}
