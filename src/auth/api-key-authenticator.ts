import type { MikroORM } from '@mikro-orm/postgresql';
import { unauthorized } from '../errors/errors.ts';
import { allPermissions } from './permissions.ts';
import { apiKeyMatches, apiKeyPrefix } from './api-key-secret.ts';
import type { Principal } from './principal.ts';

const MAX_CACHED_KEYS = 50_000;

interface CachedKey {
  principal: Principal;
  secretHash: string;
  expiresAt: number;
}

interface KeyRow {
  id: string;
  team_id: string;
  team_member_id: string | null;
  secret_hash: string;
  scopes: string[];
  acts_as_owner: boolean;
  member_active: boolean;
  permissions: string[];
}

// One round trip: the key, its member and the permissions of the member's groups.
const KEY_QUERY = `
select k.id, k.team_id, k.team_member_id, k.secret_hash, k.scopes,
       coalesce(m.is_team_owner, true) as acts_as_owner,
       (m.id is null or (m.left_team_at is null and not m.archived)) as member_active,
       coalesce(m.permissions, '{}') || coalesce((
         select array_agg(permission) from team_member_group mg
           join team_group g on g.id = mg.group_id, unnest(g.permissions) as permission
          where mg.member_id = m.id), '{}') as permissions
  from api_key k
  left join team_member m on m.id = k.team_member_id
 where k.prefix = ?`;

export interface ApiKeyAuthenticatorOptions {
  orm: MikroORM;
  cacheSeconds: number;
  now?: () => number;
}

/**
 * Resolves `Authorization: Bearer <key>` to a Principal. Keys are cached in
 * memory for `cacheSeconds`; every change to a team's keys, members or groups
 * drops that team's entries here and, through the invalidation channel, on
 * every other instance, so a rerolled or deleted key stops working at once.
 */
export class ApiKeyAuthenticator {
  private readonly orm: MikroORM;
  private readonly cacheMs: number;
  private readonly now: () => number;
  private readonly cache = new Map<string, CachedKey>();
  /** Bumped by every invalidation, so a load that raced one is not cached. */
  private generation = 0;

  constructor(options: ApiKeyAuthenticatorOptions) {
    this.orm = options.orm;
    this.cacheMs = options.cacheSeconds * 1000;
    this.now = options.now ?? Date.now;
  }

  async authenticate(authorization: string | undefined): Promise<Principal> {
    const key = bearerToken(authorization);
    const prefix = key ? apiKeyPrefix(key) : null;
    if (!key || !prefix) throw unauthorized('Missing or malformed API key');
    const cached = this.cache.get(prefix);
    const entry = cached && cached.expiresAt > this.now() ? cached : await this.load(prefix);
    if (!entry || !apiKeyMatches(key, entry.secretHash)) throw unauthorized('Invalid API key');
    return entry.principal;
  }

  invalidateTeam(teamId: string): void {
    this.generation++;
    for (const [prefix, entry] of this.cache) {
      if (entry.principal.teamId === teamId) this.cache.delete(prefix);
    }
  }

  invalidateAll(): void {
    this.generation++;
    this.cache.clear();
  }

  private async load(prefix: string): Promise<CachedKey | null> {
    const generation = this.generation;
    const rows = await this.orm.em.getConnection().execute<KeyRow[]>(KEY_QUERY, [prefix]);
    const row = rows[0];
    if (!row || !row.member_active) return null;
    const entry: CachedKey = {
      secretHash: row.secret_hash,
      expiresAt: this.now() + this.cacheMs,
      principal: {
        keyId: row.id,
        teamId: row.team_id,
        memberId: row.team_member_id,
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

function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? null;
}
