import type { MikroORM } from '@mikro-orm/postgresql';
import { unauthorized } from '../errors/errors.ts';
import { allPermissions } from './permissions.ts';
import type { Principal } from './principal.ts';
import { hashSessionToken, isWellFormedSessionToken } from './session-token.ts';

/** The signed-in user behind a session token. */
export interface SessionIdentity {
  sessionId: string;
  userId: string;
}

interface CachedSession extends SessionIdentity {
  expiresAt: number;
  /** When the row's last_used_at was last moved forward (sliding renewal). */
  lastUsedAt: number;
  cachedUntil: number;
}

interface CachedMembership {
  principal: Principal | null;
  cachedUntil: number;
}

interface SessionRow {
  id: string;
  user_id: string;
  expires_at: Date;
  last_used_at: Date;
}

interface MembershipRow {
  member_id: string;
  team_archived: boolean;
  is_team_owner: boolean;
  permissions: string[];
}

const SESSION_QUERY = `
select s.id, s.user_id, s.expires_at, s.last_used_at
  from user_session s join "user" u on u.id = s.user_id
 where s.token_hash = ? and s.expires_at > now() and not u.disabled`;

const SESSION_BY_ID_QUERY = `
select s.id, s.user_id, s.expires_at, s.last_used_at
  from user_session s join "user" u on u.id = s.user_id
 where s.id = ? and s.expires_at > now() and not u.disabled`;

// The user's current membership of the team and the permissions of its groups, as for a key linked to a member.
const MEMBERSHIP_QUERY = `
select m.id as member_id, t.archived as team_archived, m.is_team_owner,
       m.permissions || coalesce((
         select array_agg(permission) from team_member_group mg
           join team_group g on g.id = mg.group_id, unnest(g.permissions) as permission
          where mg.member_id = m.id), '{}') as permissions
  from team_member m join team t on t.id = m.team_id
 where m.user_id = ? and m.team_id = ? and m.left_team_at is null and not m.archived`;

const RENEW_AFTER_MS = 60 * 60 * 1000;
const MAX_CACHED = 50_000;
/** Unknown tokens remembered; a flood of distinct ones evicts the oldest. */
const MAX_MISSES = 10_000;

export interface SessionAuthenticatorOptions {
  orm: MikroORM;
  cacheSeconds: number;
  /** How long a session lives after its last renewal (sliding). */
  ttlSeconds: number;
  now?: () => number;
  onRenewFailed?: (error: unknown) => void;
}

/**
 * Resolves `Authorization: Bearer tss_...` to its user and, on a team's routes, to that user's
 * membership of the team. Both are cached for `cacheSeconds` (never past the session's expiry);
 * a revoked session, a disabled user or a changed password drops the user's entries here and on
 * every instance (invalidateUser, through the auth-changes channel), and a membership change drops
 * the team's (invalidateTeam), so none of them outlives the change.
 *
 * Renewal slides: a session used more than an hour after its last renewal gets its full lifetime
 * again, written in the background (one UPDATE per session per hour at most).
 */
export class SessionAuthenticator {
  private readonly orm: MikroORM;
  private readonly cacheMs: number;
  private readonly ttlMs: number;
  private readonly now: () => number;
  private readonly onRenewFailed: (error: unknown) => void;
  private readonly sessions = new Map<string, CachedSession>();
  /** The same sessions by id, for what a session made earlier (an upload URL, a tus upload) and must still be allowed. */
  private readonly sessionsById = new Map<string, CachedSession>();
  private readonly memberships = new Map<string, CachedMembership>();
  /** Token hash -> until when it is known to find no usable session, so a repeated guess costs no lookup. */
  private readonly misses = new Map<string, number>();
  /** Bumped by every invalidation, so a load that raced one is not cached. */
  private generation = 0;

  constructor(options: SessionAuthenticatorOptions) {
    this.orm = options.orm;
    this.cacheMs = options.cacheSeconds * 1000;
    this.ttlMs = options.ttlSeconds * 1000;
    this.now = options.now ?? Date.now;
    this.onRenewFailed = options.onRenewFailed ?? (() => undefined);
  }

  /**
   * The session of a token; 401 for an unknown, expired or revoked one, or a disabled user. A
   * token that found no session is remembered (bounded, for the cache's lifetime), so a repeated
   * guess costs no lookup; a session made on another instance a moment ago is found at once.
   */
  async identify(token: string): Promise<SessionIdentity> {
    if (!isWellFormedSessionToken(token)) throw unauthorized('Malformed session token');
    const tokenHash = hashSessionToken(token);
    const now = this.now();
    const cached = this.sessions.get(tokenHash);
    const session = cached && cached.cachedUntil > now ? cached : this.knownMiss(tokenHash, now) ? null : await this.load(tokenHash);
    if (!session || session.expiresAt <= now) throw unauthorized('Invalid or expired session token');
    if (now - session.lastUsedAt > RENEW_AFTER_MS) this.renew(session);
    return { sessionId: session.sessionId, userId: session.userId };
  }

  /** Whether the session is still signed in (not revoked or expired, its user not disabled), without its token. */
  async isLive(sessionId: string): Promise<boolean> {
    const now = this.now();
    const cached = this.sessionsById.get(sessionId);
    const session = cached && cached.cachedUntil > now ? cached : await this.loadById(sessionId);
    return session !== null && session.expiresAt > now;
  }

  /** The principal of a session on a team's routes: 401 when its user is not a current member, as for a key of another team. */
  async principalOn({ sessionId, userId }: SessionIdentity, teamId: string): Promise<Principal> {
    const key = `${userId}:${teamId}`;
    let membership = this.memberships.get(key);
    if (!membership || membership.cachedUntil <= this.now()) membership = await this.loadMembership(userId, teamId, key);
    if (!membership.principal) throw unauthorized('The session\'s user is not a member of this team');
    return { ...membership.principal, sessionId, rateLimitKey: `session:${sessionId}` };
  }

  invalidateUser(userId: string): void {
    this.generation++;
    for (const [hash, session] of this.sessions) if (session.userId === userId) this.sessions.delete(hash);
    for (const [id, session] of this.sessionsById) if (session.userId === userId) this.sessionsById.delete(id);
    for (const key of this.memberships.keys()) if (key.startsWith(`${userId}:`)) this.memberships.delete(key);
    // A miss names no user: an enabled user's sessions may be among them.
    this.misses.clear();
  }

  invalidateTeam(teamId: string): void {
    this.generation++;
    for (const key of this.memberships.keys()) if (key.endsWith(`:${teamId}`)) this.memberships.delete(key);
  }

  invalidateAll(): void {
    this.generation++;
    this.sessions.clear();
    this.sessionsById.clear();
    this.memberships.clear();
    this.misses.clear();
  }

  private knownMiss(tokenHash: string, now: number): boolean {
    const until = this.misses.get(tokenHash);
    if (until === undefined) return false;
    if (until > now) return true;
    this.misses.delete(tokenHash);
    return false;
  }

  private async load(tokenHash: string): Promise<CachedSession | null> {
    const generation = this.generation;
    const [row] = await this.orm.em.getConnection().execute<SessionRow[]>(SESSION_QUERY, [tokenHash]);
    if (!row) {
      this.sessions.delete(tokenHash);
      if (this.cacheMs > 0 && generation === this.generation) remember(this.misses, tokenHash, this.now() + this.cacheMs, MAX_MISSES);
      return null;
    }
    const session = this.cachedSession(row);
    if (this.cacheMs > 0 && generation === this.generation) {
      remember(this.sessions, tokenHash, session, MAX_CACHED);
      remember(this.sessionsById, session.sessionId, session, MAX_CACHED);
    }
    return session;
  }

  private async loadById(sessionId: string): Promise<CachedSession | null> {
    const generation = this.generation;
    const [row] = await this.orm.em.getConnection().execute<SessionRow[]>(SESSION_BY_ID_QUERY, [sessionId]);
    if (!row) return null;
    const session = this.cachedSession(row);
    if (this.cacheMs > 0 && generation === this.generation) remember(this.sessionsById, sessionId, session, MAX_CACHED);
    return session;
  }

  private cachedSession(row: SessionRow): CachedSession {
    const expiresAt = new Date(row.expires_at).getTime();
    return {
      sessionId: row.id,
      userId: row.user_id,
      expiresAt,
      lastUsedAt: new Date(row.last_used_at).getTime(),
      cachedUntil: Math.min(this.now() + this.cacheMs, expiresAt),
    };
  }

  private async loadMembership(userId: string, teamId: string, key: string): Promise<CachedMembership> {
    const generation = this.generation;
    const [row] = await this.orm.em.getConnection().execute<MembershipRow[]>(MEMBERSHIP_QUERY, [userId, teamId]);
    const membership: CachedMembership = {
      cachedUntil: this.now() + this.cacheMs,
      principal: row
        ? {
            keyId: null,
            sessionId: null,
            keyPrefix: null,
            userId,
            rateLimitKey: '',
            teamId,
            memberId: row.member_id,
            actingMemberId: row.member_id,
            teamArchived: row.team_archived,
            permissions: new Set(row.is_team_owner ? allPermissions : row.permissions),
            scopes: [],
          }
        : null,
    };
    if (this.cacheMs > 0 && generation === this.generation) remember(this.memberships, key, membership, MAX_CACHED);
    return membership;
  }

  private renew(session: CachedSession): void {
    const now = this.now();
    session.lastUsedAt = now;
    session.expiresAt = now + this.ttlMs;
    this.orm.em
      .getConnection()
      .execute(`update user_session set last_used_at = now(), expires_at = now() + make_interval(secs => ?) where id = ? and expires_at > now()`, [
        this.ttlMs / 1000,
        session.sessionId,
      ])
      .catch(this.onRenewFailed);
  }
}

function remember<V>(map: Map<string, V>, key: string, value: V, max: number): void {
  map.delete(key);
  // Map keeps insertion order, so the first key is the oldest entry.
  if (map.size >= max) map.delete(map.keys().next().value!);
  map.set(key, value);
}
