import type { Authenticator } from '../../../auth/authenticator.ts';
import type { OAuthSignInService } from '../../../domain/accounts/oauth-sign-in.service.ts';
import type { IssuedSession } from '../../../domain/sessions/session.service.ts';
import type { RequestRateLimiter } from '../../../limits/rate-limiter.ts';
import { json, type HttpRequest, type HttpResult, type Route } from '../../types.ts';
import { publicRouteBuilder } from '../route-builder.ts';
import { requestOrigin } from './request-origin.ts';

/** Answers that carry a session token are never stored by a cache. */
const NO_STORE = { 'Cache-Control': 'no-store' };

/** The session in the fragment, which browsers never send to a server (nor in Referer). */
function redirectWithSession(returnTo: string, issued: IssuedSession, clientState: string | null): HttpResult {
  const target = new URL(returnTo);
  target.hash = new URLSearchParams({ token: issued.token, expiresAt: issued.expiresAt, ...(clientState !== null && { clientState }) }).toString();
  return { status: 302, headers: { Location: target.href, ...NO_STORE } };
}

export interface OAuthRouteDeps {
  authenticator: Authenticator;
  /** The request rate limit, here per client address. */
  rateLimiter: RequestRateLimiter;
  oauth: OAuthSignInService;
  maxJsonBodyBytes: number;
}

/**
 * Sign-in with Discord and Google (docs/accounts.md): which ways to sign in exist, the start (a
 * session token on it makes it a link of the provider account to that user) and the provider's
 * redirect back. Public routes, limited per client address with the request rate limit.
 */
export function oauthRoutes(deps: OAuthRouteDeps): Route[] {
  const route = publicRouteBuilder(deps.maxJsonBodyBytes);
  const perAddress = (request: HttpRequest) => deps.rateLimiter.consume(`oauth:${request.remoteAddress}`);
  return [
    route('GET', '/v1/auth/providers', () => json(200, {
      providers: [{ id: 'credential', type: 'credential' }, ...deps.oauth.offered().map((id) => ({ id, type: 'oauth' }))],
    })),
    route('POST', '/v1/auth/oauth/:provider/start', async ({ request, param, body }) => {
      await perAddress(request);
      const linkUserId = request.headers['authorization'] === undefined
        ? null
        : (await deps.authenticator.identifyUser(request.headers['authorization'], request.remoteAddress)).userId;
      const parsed = await body();
      return json(200, await deps.oauth.start(param('provider'), parsed, linkUserId), NO_STORE);
    }),
    route('GET', '/v1/auth/oauth/:provider/callback', async ({ request, param }) => {
      await perAddress(request);
      const { issued, returnTo, clientState } = await deps.oauth.finish(param('provider'), request.query, requestOrigin(request));
      return returnTo ? redirectWithSession(returnTo, issued, clientState) : json(200, issued, NO_STORE);
    }),
  ];
}
