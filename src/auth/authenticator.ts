import { unauthorized } from '../errors/errors.ts';
import type { ApiKeyAuthenticator } from './api-key-authenticator.ts';
import { isUnauthorized, checkCredential, type FailureThrottle } from './failure-throttle.ts';
import type { AuthCache } from './auth-changes.ts';
import type { Principal } from './principal.ts';
import type { SessionAuthenticator, SessionIdentity } from './session-authenticator.ts';
import { isSessionToken } from './session-token.ts';
import { bearerToken } from './bearer-token.ts';

/**
 * The credentials of the team and media routes (spec 1: "a team API key or a session token
 * authenticates on the same routes"): `Authorization: Bearer tws_...` is a team API key,
 * `Bearer tss_...` a user's session, which acts on a team with that user's membership.
 * Failed attempts of either kind count against the client's address (429 past the budget).
 */
export class Authenticator implements AuthCache {
  readonly keys: ApiKeyAuthenticator;
  readonly sessions: SessionAuthenticator;
  private readonly failures: FailureThrottle;

  constructor(options: { keys: ApiKeyAuthenticator; sessions: SessionAuthenticator; failures: FailureThrottle }) {
    this.keys = options.keys;
    this.sessions = options.sessions;
    this.failures = options.failures;
  }

  /** Loads what the key check needs before the first request (the index of key prefixes). */
  async load(): Promise<void> {
    await this.keys.loadPrefixes();
  }

  /** The principal acting on `teamId`: 401 for a bad credential, a key of another team, or a user who is not a member. */
  async authenticate(authorization: string | undefined, client: string, teamId: string): Promise<Principal> {
    const token = bearerToken(authorization);
    if (token === null || !isSessionToken(token)) return checkCredential(this.failures, client, isUnauthorized, (guard) => this.keys.authenticate(authorization, guard));
    const identity = await checkCredential(this.failures, client, isUnauthorized, () => this.sessions.identify(token));
    // A live session of a user who is not a member is no failed authentication, as a key of another team is none.
    return this.sessions.principalOn(identity, teamId);
  }

  /** The signed-in user of a session token (the user's own routes); API keys are refused. */
  async identifyUser(authorization: string | undefined, client: string): Promise<SessionIdentity> {
    const token = bearerToken(authorization);
    if (token === null || !isSessionToken(token)) {
      throw unauthorized('This route needs a session token: send the header Authorization: Bearer <session token>');
    }
    return checkCredential(this.failures, client, isUnauthorized, () => this.sessions.identify(token));
  }

  /**
   * The principal of a team API key, whichever team it belongs to (GET /v1/auth/key: a key finds
   * its own team). A session token is refused with 401: a person is not a key.
   */
  async identifyKey(authorization: string | undefined, client: string): Promise<Principal> {
    const token = bearerToken(authorization);
    if (token !== null && isSessionToken(token)) {
      throw unauthorized('This route needs a team API key, not a session token: a signed-in user lists its teams with GET /v1/users/me/teams');
    }
    return checkCredential(this.failures, client, isUnauthorized, (guard) => this.keys.authenticate(authorization, guard));
  }

  invalidateTeam(teamId: string): void {
    this.keys.invalidateTeam(teamId);
    this.sessions.invalidateTeam(teamId);
  }

  invalidateUser(userId: string): void {
    this.sessions.invalidateUser(userId);
  }

  invalidateAll(): void {
    this.keys.invalidateAll();
    this.sessions.invalidateAll();
  }
}
