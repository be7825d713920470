import { createHash, randomInt } from 'node:crypto';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { calculatePKCECodeChallenge, randomNonce, randomPKCECodeVerifier, randomState } from 'openid-client';
import { z } from 'zod';
import { isOAuthProviderId, OAuthProviderError, type OAuthProvider, type OAuthProviderId, type ProviderIdentity } from '../../auth/oauth/provider.ts';
import type { CorsOrigins } from '../../config/cors-origins.ts';
import {
  accountConflict, badRequest, notFound, oauthProviderRefused, oauthProviderUnavailable, oauthStateInvalid,
} from '../../errors/errors.ts';
import type { IssuedSession, SessionService } from '../sessions/session.service.ts';
import { User } from '../users/user.entity.ts';
import { parseInput } from '../validation.ts';
import { Account } from './account.entity.ts';
import { recordDiscordMember } from './discord-member-record.ts';
import { OAuthState } from './oauth-state.entity.ts';

/** How long a started sign-in may take at the provider. */
export const OAUTH_STATE_TTL_MS = 10 * 60_000;

export const startSignInSchema = z.strictObject({
  returnTo: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).optional().meta({
    description: 'Where the callback sends the browser (302, the session in the fragment `#token=...&expiresAt=...`). '
      + 'Its origin must be the service\'s PUBLIC_URL origin or one listed in CORS_ORIGINS. Without it the callback answers JSON.',
  }),
  clientState: z.string().regex(/^[\x21-\x7e]{16,128}$/, 'must be 16-128 printable ASCII characters without spaces').optional().meta({
    description: 'With returnTo: a random value the browser app keeps (e.g. in sessionStorage) and gets back as `clientState` in the fragment; '
      + 'the app accepts the token only when it matches, so a sign-in it did not start (login CSRF) is ignored.',
  }),
});

/** A finished sign-in: the new session, and where to send the browser (null: answer JSON) with the app's clientState. */
export interface FinishedSignIn {
  issued: IssuedSession;
  returnTo: string | null;
  clientState: string | null;
}

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

const USERNAME_MAX = 20;

/** The provider's name as a username of spec 2.5 (3-20 of a-z A-Z 0-9 _). */
function usernameBase(name: string | null, providerId: string): string {
  const cleaned = (name ?? '').normalize('NFKD').replace(/\p{M}+/gu, '').replace(/[^A-Za-z0-9_]+/g, '_').replace(/^_+|_+$/g, '').replace(/_{2,}/g, '_').slice(0, USERNAME_MAX);
  return cleaned.length >= 3 ? cleaned : `${providerId}_${cleaned}`.replace(/_$/, '').padEnd(3, '0').slice(0, USERNAME_MAX);
}

/**
 * Sign-in with an external provider (docs/accounts.md, Sign-in with Discord and Google): the start
 * stores the round's secrets under the SHA-256 of its state; the callback consumes that row once,
 * lets the provider check the code (PKCE verifier, nonce), then finds, links or creates the user.
 * A provider account is never joined to an existing user by its email: that user signs in and links.
 */
export class OAuthSignInService {
  private readonly orm: MikroORM;
  private readonly providers: ReadonlyMap<OAuthProviderId, OAuthProvider>;
  private readonly publicUrl: string;
  private readonly returnOrigins: ReadonlySet<string>;
  private readonly sessions: SessionService;

  constructor(options: { orm: MikroORM; sessions: SessionService; providers: OAuthProvider[]; publicUrl: string; corsOrigins: CorsOrigins }) {
    this.orm = options.orm;
    this.sessions = options.sessions;
    this.providers = new Map(options.providers.map((provider) => [provider.id, provider]));
    this.publicUrl = options.publicUrl;
    // CORS_ORIGINS=* names no origin: the token would go anywhere, so only listed origins count.
    this.returnOrigins = new Set([new URL(options.publicUrl).origin, ...(options.corsOrigins === '*' ? [] : options.corsOrigins)]);
  }

  /** The configured providers, in a stable order. */
  offered(): OAuthProviderId[] {
    return [...this.providers.keys()].sort();
  }

  redirectUri(providerId: OAuthProviderId): string {
    return `${this.publicUrl}/v1/auth/oauth/${providerId}/callback`;
  }

  private provider(providerId: string): OAuthProvider {
    const provider = isOAuthProviderId(providerId) ? this.providers.get(providerId) : undefined;
    if (!provider) throw notFound('sign-in provider', providerId);
    return provider;
  }

  /** Begins a sign-in (or, with `linkUserId`, the linking of a provider account to that user). */
  async start(providerId: string, input: unknown, linkUserId: string | null): Promise<{ authorizationUrl: string }> {
    const provider = this.provider(providerId);
    const { returnTo, clientState } = parseInput(startSignInSchema, input);
    if (returnTo !== undefined && !this.returnOrigins.has(new URL(returnTo).origin)) {
      throw badRequest('Invalid returnTo: its origin must be the service\'s own or one listed in CORS_ORIGINS', 'returnTo');
    }
    if (clientState !== undefined && returnTo === undefined) throw badRequest('Invalid clientState: it comes back only with returnTo', 'clientState');
    const request = {
      redirectUri: this.redirectUri(provider.id),
      state: randomState(),
      codeVerifier: randomPKCECodeVerifier(),
      // Only OpenID Connect binds a nonce into an ID token.
      nonce: provider.id === 'google' ? randomNonce() : null,
    };
    let authorizationUrl: URL;
    try {
      authorizationUrl = await provider.authorizationUrl({ ...request, codeChallenge: await calculatePKCECodeChallenge(request.codeVerifier) });
    } catch (error) {
      throw this.providerFailure(provider.id, error);
    }
    // Expired rounds nobody came back from are removed by ExpiredRowsSweeper.
    const em = this.orm.em.fork();
    em.create(OAuthState, {
      stateHash: sha256(request.state),
      providerId: provider.id,
      codeVerifier: request.codeVerifier,
      nonce: request.nonce,
      linkUser: linkUserId ? em.getReference(User, linkUserId) : null,
      returnTo: returnTo ?? null,
      clientState: clientState ?? null,
      expiresAt: new Date(Date.now() + OAUTH_STATE_TTL_MS),
    });
    await em.flush();
    return { authorizationUrl: authorizationUrl.href };
  }

  /**
   * The provider's redirect back. The state row is consumed first (a second use, an expired or an
   * unknown state: 400), so a refused or failed round cannot be replayed; then the provider checks
   * the code, and the account is found, linked or created and the session issued, in one
   * transaction: a disabled user (403) leaves nothing behind.
   */
  async finish(providerId: string, query: URLSearchParams, client: { ip: string | null; userAgent: string | null }): Promise<FinishedSignIn> {
    const provider = this.provider(providerId);
    const state = query.get('state');
    if (!state) throw oauthStateInvalid('The callback carries no state');
    const em = this.orm.em.fork();
    const row = await em.findOne(OAuthState, { stateHash: sha256(state), providerId: provider.id });
    // Deleting is the claim: of two callbacks with one state, one deletes the row.
    if (!row || (await em.nativeDelete(OAuthState, { id: row.id })) === 0) throw oauthStateInvalid();
    if (row.expiresAt.getTime() <= Date.now()) throw oauthStateInvalid('The sign-in took too long: start it again');

    let identity: ProviderIdentity;
    try {
      identity = await provider.finish({ redirectUri: this.redirectUri(provider.id), state, codeVerifier: row.codeVerifier, nonce: row.nonce ?? null }, query);
    } catch (error) {
      throw this.providerFailure(provider.id, error);
    }
    const linkUserId = row.linkUser?.id ?? null;
    try {
      const issued = await em.fork().transactional(async (tx) => {
        const userId = linkUserId ? await this.link(tx, provider.id, identity, linkUserId) : await this.signIn(tx, provider.id, identity);
        if (identity.discordMember) await recordDiscordMember(tx, identity.accountId, identity.discordMember);
        return this.sessions.issue(userId, { method: provider.id, ...client }, tx);
      });
      return { issued, returnTo: row.returnTo ?? null, clientState: row.clientState ?? null };
    } catch (error) {
      // A sign-in of the same provider account, or a user taking the same name or address, at the same moment.
      if (error instanceof UniqueConstraintViolationException) throw accountConflict('linkedElsewhere', 'The account was linked or created concurrently: sign in again', provider.id);
      throw error;
    }
  }

  private providerFailure(providerId: OAuthProviderId, error: unknown): unknown {
    if (!(error instanceof OAuthProviderError)) return error;
    if (error.code === 'unreachable') return oauthProviderUnavailable(providerId);
    return oauthProviderRefused(error.code, `${providerId} refused the sign-in: ${error.message}`);
  }

  private async link(em: EntityManager, providerId: OAuthProviderId, identity: ProviderIdentity, userId: string): Promise<string> {
    const user = await em.findOneOrFail(User, { id: userId });
    const existing = await em.findOne(Account, { providerId, accountId: identity.accountId });
    if (existing && existing.user.id !== userId) {
      throw accountConflict('linkedElsewhere', `That ${providerId} account is linked to another user`, providerId);
    }
    if (!existing && (await em.count(Account, { user: userId, providerId })) > 0) {
      throw accountConflict('providerLinked', `The user already has a ${providerId} account: unlink it first`, providerId);
    }
    this.store(em, existing, user, providerId, identity);
    await em.flush();
    return userId;
  }

  private async signIn(em: EntityManager, providerId: OAuthProviderId, identity: ProviderIdentity): Promise<string> {
    const existing = await em.findOne(Account, { providerId, accountId: identity.accountId }, { populate: ['user'] });
    if (existing) {
      this.store(em, existing, existing.user, providerId, identity);
      await em.flush();
      return existing.user.id;
    }
    if (identity.email && (await this.emailInUse(em, identity.email))) {
      throw accountConflict('emailTaken', `A user with the address of this ${providerId} account exists: sign in to it and link ${providerId} there`, providerId);
    }
    const user = em.create(User, {
      username: await this.freeUsername(em, usernameBase(identity.name, providerId)),
      // Without an address from the provider: a placeholder in the reserved .invalid domain, which never receives mail.
      email: identity.email ?? `${providerId}-${identity.accountId}@users.invalid`,
      isEmailVerified: identity.email !== null && identity.emailVerified,
      emailVerified: identity.email !== null && identity.emailVerified ? new Date() : null,
      permissions: [],
    });
    this.store(em, null, user, providerId, identity);
    await em.flush();
    return user.id;
  }

  private store(em: EntityManager, existing: Account | null, user: User, providerId: OAuthProviderId, identity: ProviderIdentity): void {
    const fields = {
      data: identity.data,
      accessToken: identity.tokens.accessToken,
      refreshToken: identity.tokens.refreshToken,
      accessTokenExpiresAt: identity.tokens.accessTokenExpiresAt,
      expiresAt: identity.tokens.accessTokenExpiresAt,
      scope: identity.tokens.scope,
      idToken: identity.tokens.idToken,
    };
    if (existing) em.assign(existing, fields);
    else em.create(Account, { user, type: 'oauth', providerId, accountId: identity.accountId, ...fields });
  }

  private async emailInUse(em: EntityManager, email: string): Promise<boolean> {
    const rows = await em.execute('select 1 from "user" where lower(email) = lower(?) limit 1', [email]);
    return rows.length > 0;
  }

  /** `base` if nobody has it (in any case), else base with a number, cut to fit 20 characters. */
  private async freeUsername(em: EntityManager, base: string): Promise<string> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const suffix = attempt === 0 ? '' : `_${randomInt(10 ** Math.min(2 + attempt, 6))}`;
      const candidate = `${base.slice(0, USERNAME_MAX - suffix.length)}${suffix}`;
      const rows = await em.execute('select 1 from "user" where lower(username) = lower(?) limit 1', [candidate]);
      if (rows.length === 0) return candidate;
    }
    throw new Error('no free username found');
  }
}
