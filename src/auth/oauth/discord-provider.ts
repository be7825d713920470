import * as client from 'openid-client';
import { z } from 'zod';
import { asProviderError } from './provider-errors.ts';
import {
  callbackUrl, isLoopbackHttp, OAuthProviderError, secondsFromNow,
  type AuthorizationRequest, type DiscordMember, type OAuthProvider, type ProviderIdentity,
} from './provider.ts';

export interface DiscordSettings {
  clientId: string;
  clientSecret: string;
  /** OAUTH_DISCORD_API_URL: token at {api}/oauth2/token, the user at {api}/users/@me. */
  apiUrl: string;
  /** OAUTH_DISCORD_AUTHORIZE_URL: where the user approves (https://discord.com/oauth2/authorize). */
  authorizeUrl: string;
  /** OAUTH_DISCORD_GUILD_ID: the guild whose membership each sign-in reads (absent or null: none is read). */
  guildId?: string | null;
}

const SCOPE = 'identify email';
/** With a guild: Discord's scope for GET /users/@me/guilds/{guild.id}/member. */
const GUILD_SCOPE = 'guilds.members.read';

/** GET /users/@me (Discord's documented user object; `email` and `verified` need the email scope). */
const discordUser = z.object({
  id: z.string().min(1),
  username: z.string(),
  global_name: z.string().nullish(),
  email: z.string().nullish(),
  verified: z.boolean().nullish(),
});

/** GET /users/@me/guilds/{guild.id}/member (Discord's documented guild member object; role ids only, no names). */
const discordGuildMember = z.object({
  nick: z.string().nullish(),
  roles: z.array(z.string()),
  joined_at: z.string().nullish(),
});

/**
 * Discord as a plain OAuth 2 provider (it has no OpenID Connect): authorization code with PKCE,
 * the token from {api}/oauth2/token (client secret in the body), the account from {api}/users/@me.
 */
export class DiscordProvider implements OAuthProvider {
  readonly id = 'discord' as const;
  private readonly settings: DiscordSettings;
  private readonly config: client.Configuration;

  constructor(settings: DiscordSettings) {
    this.settings = settings;
    const api = settings.apiUrl.replace(/\/+$/, '');
    this.config = new client.Configuration(
      { issuer: new URL(settings.authorizeUrl).origin, authorization_endpoint: settings.authorizeUrl, token_endpoint: `${api}/oauth2/token` },
      settings.clientId,
      settings.clientSecret,
      client.ClientSecretPost(settings.clientSecret),
    );
    if (isLoopbackHttp(new URL(api)) || isLoopbackHttp(new URL(settings.authorizeUrl))) client.allowInsecureRequests(this.config);
  }

  async authorizationUrl(request: AuthorizationRequest & { codeChallenge: string }): Promise<URL> {
    return client.buildAuthorizationUrl(this.config, {
      redirect_uri: request.redirectUri,
      scope: this.settings.guildId ? `${SCOPE} ${GUILD_SCOPE}` : SCOPE,
      state: request.state,
      code_challenge: request.codeChallenge,
      code_challenge_method: 'S256',
      prompt: 'consent',
    });
  }

  async finish(request: AuthorizationRequest, callbackQuery: URLSearchParams): Promise<ProviderIdentity> {
    try {
      const tokens = await client.authorizationCodeGrant(this.config, callbackUrl(request.redirectUri, callbackQuery), {
        pkceCodeVerifier: request.codeVerifier,
        expectedState: request.state,
      });
      const api = this.settings.apiUrl.replace(/\/+$/, '');
      const response = await client.fetchProtectedResource(this.config, tokens.access_token, new URL(`${api}/users/@me`), 'GET');
      if (!response.ok) throw new OAuthProviderError('invalid_response', `Discord answered ${response.status} for the user`);
      const parsed = discordUser.safeParse(await response.json().catch(() => null));
      if (!parsed.success) throw new OAuthProviderError('invalid_response', 'Discord sent a user without id or username');
      const user = parsed.data;
      const member = this.settings.guildId ? await this.guildMember(tokens.access_token, user) : null;
      return {
        accountId: user.id,
        name: user.username,
        email: user.email ?? null,
        emailVerified: user.verified === true && !!user.email,
        data: { username: user.username },
        tokens: {
          accessToken: tokens.access_token,
          refreshToken: tokens.refresh_token ?? null,
          accessTokenExpiresAt: secondsFromNow(tokens.expiresIn()),
          scope: tokens.scope ?? null,
          idToken: null,
        },
        ...(member && { discordMember: member }),
      };
    } catch (error) {
      throw asProviderError(error);
    }
  }

  /**
   * The user's membership of the configured guild: 200 is a member, 404 (Unknown Member or Guild)
   * is none. Any other answer, or none, leaves it unknown (null): the sign-in goes on without it.
   */
  private async guildMember(accessToken: string, user: z.infer<typeof discordUser>): Promise<{ guildId: string; member: DiscordMember } | null> {
    const guildId = this.settings.guildId!;
    const api = this.settings.apiUrl.replace(/\/+$/, '');
    const response = await client.fetchProtectedResource(this.config, accessToken, new URL(`${api}/users/@me/guilds/${encodeURIComponent(guildId)}/member`), 'GET')
      .catch(() => null);
    if (!response) return null;
    const person = { id: user.id, username: user.username, globalName: user.global_name ?? null, displayName: user.global_name ?? user.username };
    if (response.status === 404) return { guildId, member: { isMember: false, ...person, nick: null, joinedAt: null, roles: [] } };
    const parsed = response.ok ? discordGuildMember.safeParse(await response.json().catch(() => null)) : null;
    if (!parsed?.success) return null;
    const joined = parsed.data.joined_at ? new Date(parsed.data.joined_at) : null;
    return {
      guildId,
      member: {
        isMember: true, ...person, nick: parsed.data.nick ?? null,
        joinedAt: joined && !Number.isNaN(joined.getTime()) ? joined.toISOString() : null,
        roles: parsed.data.roles.map((id) => ({ id, name: null })),
      },
    };
  }
}
