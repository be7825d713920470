import type { TeamStorageState } from './team.service.ts';

/**
 * The PostgreSQL channel on which instances hear that a team's limits changed
 * (payload: the team id) or a plan's (payload: ''); NOTIFYed by triggers
 * (Migration20261123040000GroupCommit), so on commit and whatever made the change.
 */
export const TEAM_LIMITS_CHANNEL = 'team_limits';

const MAX_CACHED_TEAMS = 50_000;

interface CachedState {
  state: TeamStorageState;
  expiresAt: number;
}

export interface TeamStateCacheOptions {
  load(teamId: string): Promise<TeamStorageState>;
  /** A safety net only: changes are announced on TEAM_LIMITS_CHANNEL. */
  ttlMs: number;
  now?: () => number;
}

/**
 * A team's limits and its last known storage counters, kept in memory so that
 * a small upload needs no query before its commit. Limits are coherent: every
 * change drops the team here and, through TEAM_LIMITS_CHANNEL, on every other
 * instance (as ApiKeyAuthenticator does for keys). The counters are only a
 * hint, refreshed by this instance's commits: whatever the cache says, the
 * commit checks storage and file size in the database (media_commit_uploads),
 * and a caller refuses only after a fresh read agrees.
 */
export class TeamStateCache {
  private readonly options: TeamStateCacheOptions;
  private readonly now: () => number;
  private readonly cache = new Map<string, CachedState>();
  /** Bumped by every invalidation, so a load that raced one is not cached. */
  private generation = 0;

  constructor(options: TeamStateCacheOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
  }

  /** The cached state, loading it when absent or expired. */
  async get(teamId: string): Promise<TeamStorageState> {
    const cached = this.cache.get(teamId);
    if (cached && cached.expiresAt > this.now()) return cached.state;
    return this.fresh(teamId);
  }

  /** The state as the database has it now (and cached). */
  async fresh(teamId: string): Promise<TeamStorageState> {
    const generation = this.generation;
    const state = await this.options.load(teamId);
    if (this.options.ttlMs > 0 && generation === this.generation) {
      this.cache.delete(teamId);
      // Map keeps insertion order, so the first key is the oldest entry.
      if (this.cache.size >= MAX_CACHED_TEAMS) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(teamId, { state, expiresAt: this.now() + this.options.ttlMs });
    }
    return state;
  }

  /** Whether the team is cached now (tests, metrics). */
  has(teamId: string): boolean {
    return this.cache.has(teamId);
  }

  /** A commit on this instance answered the team's used storage. */
  noteUsedStorage(teamId: string, usedStorage: number): void {
    const cached = this.cache.get(teamId);
    if (cached) cached.state = { ...cached.state, usedStorage };
  }

  invalidateTeam(teamId: string): void {
    this.generation++;
    this.cache.delete(teamId);
  }

  invalidateAll(): void {
    this.generation++;
    this.cache.clear();
  }
}
