import type { Services } from '../../../app.ts';
import type { OAuthSignInService } from '../../../domain/accounts/oauth-sign-in.service.ts';
import type { IssuedSession } from '../../../domain/sessions/session.service.ts';
import { json, type HttpRequest, type HttpResult, type Route } from '../../types.ts';
import { requestOrigin } from './user-route.ts';

/** Answers that carry a session token are never stored by a cache. */
const NO_STORE = { 'Cache-Control': 'no-store' };

/** The session in the fragment, which browsers never send to a server (nor in Referer). */
function redirectWithSession(returnTo: string, issued: IssuedSession, clientState: string | null): HttpResult {
  const target = new URL(returnTo);
  target.hash = new URLSearchParams({ token: issued.token, expiresAt: issued.expiresAt, ...(clientState !== null && { clientState }) }).toString();
  return { status: 302, headers: { Location: target.href, ...NO_STORE } };
}

/**
 * Sign-in with Discord and Google (docs/accounts.md): which ways to sign in exist, the start (a
 * session token on it makes it a link of the provider account to that user) and the provider's
 * redirect back. Public routes, limited per client address with the request rate limit.
 */
export function oauthRoutes(
  deps: Pick<Services, 'authenticator' | 'rateLimiter'> & { oauth: OAuthSignInService; maxJsonBodyBytes: number },
): Route[] {
  const perAddress = (request: HttpRequest) => deps.rateLimiter.consume(`oauth:${request.remoteAddress}`);
  return [
    {
      method: 'GET',
      pattern: '/v1/auth/providers',
      handler: () => json(200, {
        providers: [{ id: 'credential', type: 'credential' }, ...deps.oauth.offered().map((id) => ({ id, type: 'oauth' }))],
      }),
    },
    {
      method: 'POST',
      pattern: '/v1/auth/oauth/:provider/start',
      handler: async (request) => {
        await perAddress(request);
        const linkUserId = request.headers['authorization'] === undefined
          ? null
          : (await deps.authenticator.identifyUser(request.headers['authorization'], request.remoteAddress)).userId;
        const body = await request.body.json(deps.maxJsonBodyBytes);
        return json(200, await deps.oauth.start(request.params['provider'] ?? '', body, linkUserId), NO_STORE);
      },
    },
    {
      method: 'GET',
      pattern: '/v1/auth/oauth/:provider/callback',
      handler: async (request) => {
        await perAddress(request);
        const { issued, returnTo, clientState } = await deps.oauth.finish(request.params['provider'] ?? '', request.query, requestOrigin(request));
        return returnTo ? redirectWithSession(returnTo, issued, clientState) : json(200, issued, NO_STORE);
      },
    },
  ];
}
