import t from 'tap';
import { defaultPlanLimits } from '../../src/domain/plans/plan-limits.ts';
import { TeamStateCache } from '../../src/domain/teams/team-state-cache.ts';
import type { TeamStorageState } from '../../src/domain/teams/team.service.ts';

// The cache in front of the team state query: how often it loads, and that an invalidation wins
// over a load that raced it.

function counting(states: Map<string, TeamStorageState>) {
  const loads: string[] = [];
  let gate: Promise<void> | null = null;
  return {
    loads,
    hold(): () => void {
      let open!: () => void;
      gate = new Promise<void>((resolve) => (open = resolve));
      return () => {
        gate = null;
        open();
      };
    },
    load: async (teamId: string) => {
      loads.push(teamId);
      const state = states.get(teamId)!;
      if (gate) await gate;
      return state;
    },
  };
}

const state = (usedStorage: number): TeamStorageState => ({ limits: defaultPlanLimits, usedStorage, reservedStorage: 0, stripMetadata: false });

t.test('a cached team needs no load until it expires or is invalidated', async (t) => {
  let now = 0;
  const source = counting(new Map([['a', state(1)], ['b', state(2)]]));
  const cache = new TeamStateCache({ load: source.load, ttlMs: 1000, now: () => now });
  t.equal((await cache.get('a')).usedStorage, 1);
  await cache.get('a');
  await cache.get('b');
  t.same(source.loads, ['a', 'b'], 'one load per team');
  cache.noteUsedStorage('a', 7);
  t.equal((await cache.get('a')).usedStorage, 7, 'a commit updates the counter hint');
  cache.invalidateTeam('a');
  await cache.get('a');
  await cache.get('b');
  t.same(source.loads, ['a', 'b', 'a'], 'only the invalidated team loads again');
  now = 1001;
  await cache.get('b');
  t.same(source.loads, ['a', 'b', 'a', 'b'], 'an expired entry loads again');
  cache.invalidateAll();
  t.notOk(cache.has('a'));
  t.notOk(cache.has('b'));
  await cache.fresh('a');
  t.equal(source.loads.length, 5, 'fresh always loads');
});

t.test('a load that an invalidation overtook is answered but not cached', async (t) => {
  const source = counting(new Map([['a', state(1)]]));
  const cache = new TeamStateCache({ load: source.load, ttlMs: 60_000 });
  const open = source.hold();
  const loading = cache.get('a');
  cache.invalidateTeam('a');
  open();
  t.equal((await loading).usedStorage, 1);
  t.notOk(cache.has('a'), 'what it read may predate the change');
  await cache.get('a');
  t.ok(cache.has('a'));
});

t.test('a TTL of 0 caches nothing', async (t) => {
  const source = counting(new Map([['a', state(1)]]));
  const cache = new TeamStateCache({ load: source.load, ttlMs: 0 });
  await cache.get('a');
  await cache.get('a');
  t.equal(source.loads.length, 2);
});
