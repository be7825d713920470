/** The external sign-in providers (OAuth 2.0 with PKCE; google also OpenID Connect). */
export const OAUTH_PROVIDERS = ['discord', 'google'] as const;
export type OAuthProviderId = (typeof OAUTH_PROVIDERS)[number];

export function isOAuthProviderId(value: string): value is OAuthProviderId {
  return (OAUTH_PROVIDERS as readonly string[]).includes(value);
}

/** What one sign-in round needs to remember between the start and the callback (kept in oauth_state). */
export interface AuthorizationRequest {
  /** `${publicUrl}/v1/auth/oauth/<provider>/callback`: sent at the start, repeated at the token exchange. */
  redirectUri: string;
  state: string;
  codeVerifier: string;
  /** OpenID Connect only: bound into the ID token. */
  nonce: string | null;
}

/** The provider account a finished sign-in names, with what is stored in its account row. */
export interface ProviderIdentity {
  /** The provider's stable id of the account (OIDC `sub`, Discord user id). */
  accountId: string;
  /** A name to derive a username from (Discord username, Google name or email). */
  name: string | null;
  email: string | null;
  /** True only when the provider says it verified the address. */
  emailVerified: boolean;
  /** Spec 2.6 `data` of the account: discord `{ username }`, google `{ email }`. */
  data: Record<string, unknown>;
  tokens: {
    accessToken: string;
    refreshToken: string | null;
    accessTokenExpiresAt: Date | null;
    scope: string | null;
    idToken: string | null;
  };
  /** Discord with a guild configured: the user's membership of it, when Discord answered (spec 2.8's member). */
  discordMember?: { guildId: string; member: DiscordMember };
}

/** The provider refused or failed the sign-in (error=access_denied, a bad code, a bad ID token...). */
export class OAuthProviderError extends Error {
  override name = 'OAuthProviderError';
  /** The OAuth error code when the provider sent one (access_denied, invalid_grant...). */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

export interface OAuthProvider {
  readonly id: OAuthProviderId;
  /** The address to send the user to. */
  authorizationUrl(request: AuthorizationRequest & { codeChallenge: string }): Promise<URL>;
  /**
   * Checks the authorization response (`callbackQuery`: the query the provider redirected with),
   * exchanges the code with the verifier and reads the account. Throws OAuthProviderError.
   */
  finish(request: AuthorizationRequest, callbackQuery: URLSearchParams): Promise<ProviderIdentity>;
}

/** Plain http is accepted only towards loopback hosts (a provider running inside a test). */
export function isLoopbackHttp(url: URL): boolean {
  if (url.protocol !== 'http:') return false;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** The callback URL as the provider sent the browser to it: the redirect URI plus the query. */
export function callbackUrl(redirectUri: string, query: URLSearchParams): URL {
  const url = new URL(redirectUri);
  url.search = query.toString();
  return url;
}

export function secondsFromNow(seconds: number | undefined): Date | null {
  return seconds === undefined ? null : new Date(Date.now() + seconds * 1000);
}

/**
 * Spec 2.8's member: the user's membership of the guild as Discord answered it. Discord names a
 * member's roles by id only (their names need a bot's token, which the service has not): `name` is null.
 */
export interface DiscordMember {
  isMember: boolean;
  id: string;
  username: string;
  globalName: string | null;
  displayName: string;
  nick: string | null;
  joinedAt: string | null;
  roles: { id: string; name: string | null }[];
}
