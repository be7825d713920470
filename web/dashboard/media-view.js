import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { BulkBar } from './bulk-bar.js';
import { FolderActions } from './folder-actions.js';
import { FolderTree } from './folder-tree.js';
import { useFolders } from './folders.js';
import { html } from './html.js';
import { MediaDetails } from './media-details.js';
import { MediaFilters } from './media-filters.js';
import { MediaGrid, MediaList } from './media-grid.js';
import { useMediaPages } from './media-pages.js';
import { refusalText } from './refusal-words.js';
import { allows, useSession } from './session.js';

// The library: folders on the side, filters on top, the files as a grid or a list with more pages
// loaded as the end comes into view, and one file's details beside them.

const NO_FILTERS = { folderId: null, search: '', type: 'all', tags: [] };

export function MediaView() {
  const { call, credential, team } = useSession();
  const teamId = credential.teamId;
  const [filters, setFilters] = useState(NO_FILTERS);
  const [layout, setLayout] = useState('grid');
  const [selected, setSelected] = useState(() => new Set());
  const [openId, setOpenId] = useState(null);
  const folders = useFolders(call, teamId);
  const pages = useMediaPages(call, teamId, filters);
  const canEdit = allows(team?.permissions, 'team.media.edit');
  const canDelete = allows(team?.permissions, 'team.media.delete');

  useEffect(() => setSelected(new Set()), [JSON.stringify(filters)]);
  // Closing the details gives the focus back to the file that was open (a keyboard user goes on from
  // there): in the same task as the render that removed them, so the focus never rests on the page.
  const returnFocusTo = useRef(null);
  useLayoutEffect(() => {
    if (openId !== null || returnFocusTo.current === null) return;
    document.querySelector(`[data-file="${CSS.escape(returnFocusTo.current)}"]`)?.focus();
    returnFocusTo.current = null;
  }, [openId]);

  const toggle = (id) => setSelected((previous) => {
    const next = new Set(previous);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    return next;
  });
  const removeFiles = (ids) => {
    pages.remove(ids);
    setSelected((previous) => new Set([...previous].filter((id) => !ids.has(id))));
    if (ids.has(openId)) setOpenId(null);
    void folders.reload();
  };
  const bulkDone = (action, ids) => {
    if (action === 'delete') removeFiles(ids);
    else {
      void pages.reload();
      void folders.reload();
    }
  };

  const openFile = pages.items.find((item) => item.id === openId) ?? null;
  const Items = layout === 'grid' ? MediaGrid : MediaList;
  return html`<div class="media-layout" data-details=${openFile ? 'open' : 'closed'}>
    <div class="sidebar">
      <${FolderTree} folders=${folders.folders} selected=${filters.folderId} onSelect=${(folderId) => setFilters((current) => ({ ...current, folderId }))} />
      <${FolderActions} call=${call} teamId=${teamId} folders=${folders.folders} selected=${filters.folderId} canEdit=${canEdit}
        onChanged=${async () => {
          await folders.reload();
          await pages.reload();
        }}
        onSelect=${(folderId) => setFilters((current) => ({ ...current, folderId }))} />
    </div>
    <section class="library" aria-label="Files">
      <${MediaFilters} filters=${filters} onChange=${setFilters} layout=${layout} onLayout=${setLayout} call=${call} teamId=${teamId} />
      ${canEdit || canDelete ? html`<${BulkBar} selected=${selected} folders=${folders.folders} call=${call} teamId=${teamId}
        canEdit=${canEdit} canDelete=${canDelete} onDone=${bulkDone} onClear=${() => setSelected(new Set())}
        onSelectPage=${() => setSelected(new Set(pages.items.map((item) => item.id)))} />` : ''}
      <p class="result-count" aria-live="polite">${pages.totalCount === null ? '' : `${pages.totalCount} ${pages.totalCount === 1 ? 'file' : 'files'}`}</p>
      ${pages.error ? html`<p role="alert" class="error">${refusalText(pages.error)}</p>` : ''}
      ${!pages.loading && pages.totalCount === 0 ? html`<p class="empty">No files here yet. Upload some from the Upload view.</p>` : ''}
      <${Items} items=${pages.items} selected=${selected} onToggle=${toggle} onOpen=${setOpenId} openId=${openId} />
      <${MoreFiles} pages=${pages} />
    </section>
    ${openFile ? html`<${MediaDetails} file=${openFile} folders=${folders.folders} call=${call} teamId=${teamId}
      canEdit=${canEdit} canDelete=${canDelete}
      onChanged=${(file) => {
        pages.replace(file);
        void folders.reload();
      }}
      onDeleted=${(id) => removeFiles(new Set([id]))}
      onClose=${() => {
        returnFocusTo.current = openFile.id;
        setOpenId(null);
      }} />` : ''}
  </div>`;
}

/** The next page loads when the end of the list comes into view, or with the button (keyboard users). */
function MoreFiles({ pages }) {
  const sentinel = useRef(null);
  const loadMore = useRef(pages.loadMore);
  loadMore.current = pages.loadMore;
  useEffect(() => {
    if (!pages.hasMore || !sentinel.current) return;
    const observer = new IntersectionObserver((entries) => entries.some((entry) => entry.isIntersecting) && loadMore.current());
    observer.observe(sentinel.current);
    return () => observer.disconnect();
  }, [pages.hasMore, pages.items.length]);
  if (pages.loading) return html`<p class="muted" role="status">Loading files…</p>`;
  if (!pages.hasMore) return '';
  return html`<div ref=${sentinel} class="more">
    <button type="button" class="secondary" onClick=${() => pages.loadMore()}>Load more (${pages.items.length} of ${pages.totalCount} shown)</button>
  </div>`;
}
