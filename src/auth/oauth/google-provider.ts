import * as client from 'openid-client';
import { asProviderError } from './provider-errors.ts';
import {
  callbackUrl, isLoopbackHttp, OAuthProviderError, secondsFromNow,
  type AuthorizationRequest, type OAuthProvider, type ProviderIdentity,
} from './provider.ts';

export interface GoogleSettings {
  clientId: string;
  clientSecret: string;
  /** OAUTH_GOOGLE_ISSUER: the OpenID Connect issuer, discovered through its /.well-known/openid-configuration. */
  issuer: string;
}

const SCOPE = 'openid email profile';

/**
 * Google as an OpenID Connect provider: discovery from the issuer, authorization code with PKCE
 * (S256) and a nonce bound into the ID token, which openid-client checks (signature, issuer,
 * audience, expiry, nonce). The email comes from the ID token, or from userinfo when absent.
 */
export class GoogleProvider implements OAuthProvider {
  readonly id = 'google' as const;
  private readonly settings: GoogleSettings;
  private configuration: Promise<client.Configuration> | null = null;

  constructor(settings: GoogleSettings) {
    this.settings = settings;
  }

  /** Discovered once; a failed discovery is retried by the next sign-in. */
  private config(): Promise<client.Configuration> {
    if (!this.configuration) {
      const issuer = new URL(this.settings.issuer);
      this.configuration = client
        .discovery(issuer, this.settings.clientId, this.settings.clientSecret, undefined, {
          execute: isLoopbackHttp(issuer) ? [client.allowInsecureRequests] : [],
        })
        .catch((error: unknown) => {
          this.configuration = null;
          throw asProviderError(error);
        });
    }
    return this.configuration;
  }

  async authorizationUrl(request: AuthorizationRequest & { codeChallenge: string }): Promise<URL> {
    return client.buildAuthorizationUrl(await this.config(), {
      redirect_uri: request.redirectUri,
      scope: SCOPE,
      state: request.state,
      nonce: request.nonce ?? '',
      code_challenge: request.codeChallenge,
      code_challenge_method: 'S256',
    });
  }

  async finish(request: AuthorizationRequest, callbackQuery: URLSearchParams): Promise<ProviderIdentity> {
    const config = await this.config();
    try {
      if (!request.nonce) throw new OAuthProviderError('invalid_request', 'No nonce was stored for this sign-in');
      const tokens = await client.authorizationCodeGrant(config, callbackUrl(request.redirectUri, callbackQuery), {
        pkceCodeVerifier: request.codeVerifier,
        expectedState: request.state,
        expectedNonce: request.nonce,
        idTokenExpected: true,
      });
      const claims = tokens.claims();
      if (!claims) throw new OAuthProviderError('invalid_response', 'The provider sent no ID token');
      let email = typeof claims['email'] === 'string' ? claims['email'] : null;
      let emailVerified = claims['email_verified'] === true;
      let name = typeof claims['name'] === 'string' ? claims['name'] : null;
      if (!email) {
        const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
        email = info.email ?? null;
        emailVerified = info.email_verified === true;
        name ??= info.name ?? null;
      }
      return {
        accountId: claims.sub,
        name: name ?? email?.split('@')[0] ?? null,
        email,
        emailVerified,
        data: { email },
        tokens: {
          accessToken: tokens.access_token,
          refreshToken: tokens.refresh_token ?? null,
          accessTokenExpiresAt: secondsFromNow(tokens.expiresIn()),
          scope: tokens.scope ?? null,
          idToken: tokens.id_token ?? null,
        },
      };
    } catch (error) {
      throw asProviderError(error);
    }
  }
}
