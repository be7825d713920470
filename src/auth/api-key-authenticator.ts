import type { MikroORM } from '@mikro-orm/postgresql';
import { unauthorized } from '../errors/errors.ts';
import { allPermissions } from './permissions.ts';
import { apiKeyMatches, apiKeyPrefix } from './api-key-secret.ts';
import type { Principal } from './principal.ts';
import { bearerToken } from './bearer-token.ts';

const MAX_CACHED_KEYS = 50_000;
/** Unknown prefixes remembered; a flood of distinct ones evicts the oldest (the failure throttle bounds that flood). */
const MAX_MISSED_PREFIXES = 10_000;

interface CachedKey {
  principal: Principal;
  secretHash: string;
  expiresAt: number;
}

interface KeyRow {
  id: string;
  team_id: string;
  team_member_id: string | null;
  acting_member_id: string | null;
  team_archived: boolean;
  secret_hash: string;
  scopes: string[];
  acts_as_owner: boolean;
  member_active: boolean;
  permissions: string[];
}

// One round trip: the key, its member and the permissions of the member's groups.
const KEY_QUERY = `
select k.id, k.team_id, k.team_member_id, k.secret_hash, k.scopes,
       coalesce(k.team_member_id, (select o.id from team_member o where o.team_id = k.team_id and o.is_team_owner
                                    order by o.created_at limit 1)) as acting_member_id,
       t.archived as team_archived,
       coalesce(m.is_team_owner, true) as acts_as_owner,
       (m.id is null or (m.left_team_at is null and not m.archived
                         and not exists (select 1 from "user" u where u.id = m.user_id and u.disabled))) as member_active,
       coalesce(m.permissions, '{}') || coalesce((
         select array_agg(permission) from team_member_group mg
           join team_group g on g.id = mg.group_id, unnest(g.permissions) as permission
          where mg.member_id = m.id), '{}') as permissions
  from api_key k
  join team t on t.id = k.team_id
  left join team_member m on m.id = k.team_member_id
 where k.prefix = ?`;

export interface ApiKeyAuthenticatorOptions {
  orm: MikroORM;
  cacheSeconds: number;
  now?: () => number;
  /** Called once per database lookup of a prefix, with whether a usable key was found (metrics). */
  onLookup?: (found: boolean) => void;
}

/**
 * Resolves `Authorization: Bearer <key>` to a Principal. Keys are cached in
 * memory for `cacheSeconds`; every change to a team's keys, members or groups
 * drops that team's entries here and, through the invalidation channel, on
 * every other instance, so a rerolled or deleted key stops working at once.
 *
 * Prefixes that found no usable key are remembered too (bounded, same
 * lifetime), so repeating a miss does not reach the database; any team change
 * forgets them all, since a new or reactivated key may carry such a prefix.
 * Failed authentications are throttled per client address by Authenticator.
 */
export class ApiKeyAuthenticator {
  private readonly orm: MikroORM;
  private readonly cacheMs: number;
  private readonly now: () => number;
  private readonly cache = new Map<string, CachedKey>();
  /** Prefix -> until when it is known to have no usable key. */
  private readonly misses = new Map<string, number>();
  /** Lookups under way: concurrent requests for one prefix share one query, unless an invalidation came after it started. */
  private readonly loading = new Map<string, { generation: number; result: Promise<CachedKey | null> }>();
  private readonly onLookup: (found: boolean) => void;
  /** Bumped by every invalidation, so a load that raced one is not cached. */
  private generation = 0;
  /**
   * Every key prefix that exists, with its team: a prefix outside it is known to be a guess. Loaded
   * by loadPrefixes() at start and reloaded per team on every invalidation, so it follows keys
   * made, rerolled and deleted on any instance. Only consulted for a client past its failure budget.
   */
  private readonly prefixes = new Map<string, string>();
  /** The latest reload of each team's prefixes (and '' for all): an older one finishing later is dropped. */
  private readonly prefixLoads = new Map<string, number>();
  private prefixLoadCount = 0;
  private readonly reloading = new Set<Promise<void>>();

  constructor(options: ApiKeyAuthenticatorOptions) {
    this.orm = options.orm;
    this.cacheMs = options.cacheSeconds * 1000;
    this.now = options.now ?? Date.now;
    this.onLookup = options.onLookup ?? (() => undefined);
  }

  /**
   * The principal of the `Authorization` header (failed attempts are throttled by the caller,
   * Authenticator). `beforeGuessLookup` runs before a prefix that exists nowhere is looked up
   * anyway (the index may lag a key just made on another instance): it refuses a client that is
   * past its failure budget, so that its guesses cost no database lookup.
   */
  async authenticate(authorization: string | undefined, beforeGuessLookup: () => Promise<void> = async () => undefined): Promise<Principal> {
    const key = bearerToken(authorization);
    const prefix = key ? apiKeyPrefix(key) : null;
    if (!key || !prefix) throw unauthorized(key ? 'Malformed API key' : authorizationProblem(authorization));
    const entry = await this.entryOf(prefix, beforeGuessLookup);
    if (!entry || !apiKeyMatches(key, entry.secretHash)) throw unauthorized('Invalid API key');
    return entry.principal;
  }

  /**
   * The principal the key with `prefix` has now, without its secret: for what a key made earlier
   * (an upload URL, a tus upload) and must still be allowed. Null when no usable key has the prefix
   * any more (rerolled, deleted, its member gone). From the same cache as authenticate().
   */
  async currentPrincipal(prefix: string): Promise<Principal | null> {
    return (await this.entryOf(prefix))?.principal ?? null;
  }

  private async entryOf(prefix: string, beforeGuessLookup: () => Promise<void> = async () => undefined): Promise<CachedKey | null> {
    const cached = this.cache.get(prefix);
    if (cached && cached.expiresAt > this.now()) return cached;
    if (this.knownMiss(prefix)) return null;
    if (!(await this.prefixExists(prefix))) await beforeGuessLookup();
    return this.loadOnce(prefix);
  }

  /** Whether a key has `prefix`, once the reloads under way (a key just made or rerolled) have landed. */
  private async prefixExists(prefix: string): Promise<boolean> {
    if (this.prefixes.has(prefix)) return true;
    await Promise.allSettled(this.reloading);
    return this.prefixes.has(prefix);
  }

  /** Loads the index of existing prefixes (at start, and again on invalidateAll). */
  async loadPrefixes(): Promise<void> {
    await this.reloadPrefixes(null);
  }

  invalidateTeam(teamId: string): void {
    this.generation++;
    for (const [prefix, entry] of this.cache) {
      if (entry.principal.teamId === teamId) this.cache.delete(prefix);
    }
    // A miss names no team: a created, rerolled or reactivated key of any team may carry its prefix.
    this.misses.clear();
    this.reloadPrefixesInBackground(teamId);
  }

  invalidateAll(): void {
    this.generation++;
    this.cache.clear();
    this.misses.clear();
    this.reloadPrefixesInBackground(null);
  }

  /** Best effort: until a failed reload is retried by the next invalidation, a new key may be refused only to a client past its failure budget. */
  private reloadPrefixesInBackground(teamId: string | null): void {
    const reload = this.reloadPrefixes(teamId).catch(() => undefined);
    this.reloading.add(reload);
    void reload.finally(() => this.reloading.delete(reload));
  }

  private async reloadPrefixes(teamId: string | null): Promise<void> {
    const load = ++this.prefixLoadCount;
    this.prefixLoads.set(teamId ?? '', load);
    const rows = await this.orm.em.getConnection().execute<{ prefix: string; team_id: string }[]>(
      teamId === null ? 'select prefix, team_id from api_key' : 'select prefix, team_id from api_key where team_id = ?',
      teamId === null ? [] : [teamId],
    );
    if (this.prefixLoads.get(teamId ?? '') !== load) return;
    if (teamId === null) this.prefixes.clear();
    else for (const [prefix, owner] of this.prefixes) if (owner === teamId) this.prefixes.delete(prefix);
    for (const row of rows) this.prefixes.set(row.prefix, row.team_id);
  }

  private knownMiss(prefix: string): boolean {
    const until = this.misses.get(prefix);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.misses.delete(prefix);
    return false;
  }

  private rememberMiss(prefix: string, generation: number): void {
    if (this.cacheMs <= 0 || generation !== this.generation) return;
    this.misses.delete(prefix);
    if (this.misses.size >= MAX_MISSED_PREFIXES) this.misses.delete(this.misses.keys().next().value!);
    this.misses.set(prefix, this.now() + this.cacheMs);
  }

  private loadOnce(prefix: string): Promise<CachedKey | null> {
    const pending = this.loading.get(prefix);
    if (pending && pending.generation === this.generation) return pending.result;
    const started = { generation: this.generation, result: this.load(prefix) };
    this.loading.set(prefix, started);
    void started.result
      .finally(() => {
        if (this.loading.get(prefix) === started) this.loading.delete(prefix);
      })
      .catch(() => undefined);
    return started.result;
  }

  private async load(prefix: string): Promise<CachedKey | null> {
    const generation = this.generation;
    const rows = await this.orm.em.getConnection().execute<KeyRow[]>(KEY_QUERY, [prefix]);
    const row = rows[0];
    this.onLookup(Boolean(row?.member_active));
    if (!row || !row.member_active) {
      this.rememberMiss(prefix, generation);
      return null;
    }
    const entry: CachedKey = {
      secretHash: row.secret_hash,
      expiresAt: this.now() + this.cacheMs,
      principal: {
        keyId: row.id,
        sessionId: null,
        keyPrefix: prefix,
        userId: null,
        rateLimitKey: row.id,
        teamId: row.team_id,
        memberId: row.team_member_id,
        actingMemberId: row.acting_member_id,
        teamArchived: row.team_archived,
        permissions: new Set(row.acts_as_owner ? allPermissions : row.permissions),
        scopes: row.scopes,
      },
    };
    if (this.cacheMs > 0 && generation === this.generation) {
      this.cache.delete(prefix);
      // Map keeps insertion order, so the first key is the oldest entry.
      if (this.cache.size >= MAX_CACHED_KEYS) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(prefix, entry);
    }
    return entry;
  }
}


const EXPECTED_FORM = 'Authorization: Bearer <API key>';

/** What is wrong with a header that holds no bearer token, in words that show the expected form. */
function authorizationProblem(header: string | undefined): string {
  if (!header?.trim()) return `Missing API key: send the header ${EXPECTED_FORM}`;
  if (apiKeyPrefix(header.trim())) return `The API key must follow the word Bearer: send the header ${EXPECTED_FORM}`;
  return `Malformed Authorization header: expected ${EXPECTED_FORM}`;
}
