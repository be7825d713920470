import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

// The team's files for the current filters, page by page with the API's paging (pageNumber and
// pageSize headers): the first page when the filters change, the next one on demand.

export const PAGE_SIZE = 60;

export function mediaQuery(filters) {
  return {
    folderId: filters.folderId ?? undefined,
    search: filters.search.trim() || undefined,
    type: filters.type === 'all' ? undefined : filters.type,
    tags: filters.tags.length ? filters.tags.join(',') : undefined,
  };
}

export function useMediaPages(call, teamId, filters) {
  const [state, setState] = useState({ items: [], totalCount: null, page: 0, loading: true, error: null });
  const generation = useRef(0);
  const key = JSON.stringify(filters);

  const load = useCallback(async (page, fresh) => {
    const current = fresh ? ++generation.current : generation.current;
    setState((previous) => ({ ...previous, loading: true, error: null }));
    try {
      const answer = await call('GET', `/v1/cdn/media/${teamId}`, {
        query: mediaQuery(filters),
        headers: { pageNumber: String(page), pageSize: String(PAGE_SIZE) },
      });
      if (current !== generation.current) return;
      setState((previous) => {
        const known = fresh ? new Set() : new Set(previous.items.map((item) => item.id));
        const items = fresh ? answer.media : [...previous.items, ...answer.media.filter((item) => !known.has(item.id))];
        return { items, totalCount: answer.totalCount, page, loading: false, error: null };
      });
    } catch (error) {
      if (current === generation.current) setState((previous) => ({ ...previous, loading: false, error }));
    }
  }, [call, teamId, key]);

  useEffect(() => {
    void load(1, true);
  }, [load]);

  return {
    ...state,
    hasMore: state.totalCount !== null && state.items.length < state.totalCount,
    loadMore: () => !state.loading && load(state.page + 1, false),
    reload: () => load(1, true),
    /** A changed file, as the API answered it. */
    replace: (file) => setState((previous) => ({ ...previous, items: previous.items.map((item) => (item.id === file.id ? { ...item, ...file } : item)) })),
    remove: (ids) => setState((previous) => ({
      ...previous,
      items: previous.items.filter((item) => !ids.has(item.id)),
      totalCount: previous.totalCount === null ? null : Math.max(0, previous.totalCount - previous.items.filter((item) => ids.has(item.id)).length),
    })),
  };
}
