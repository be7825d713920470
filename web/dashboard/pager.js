import { html } from './html.js';

// Previous and next over the API's pages (pageNumber, pageSize), with where the list stands.

export function Pager({ label, page, pageSize, count, onPage }) {
  const pages = Math.max(1, Math.ceil(count / pageSize));
  if (count <= pageSize && page === 1) return '';
  return html`<nav class="pager" aria-label=${label}>
    <button type="button" class="secondary" disabled=${page <= 1} onClick=${() => onPage(page - 1)}>Previous page</button>
    <span aria-live="polite">Page ${page} of ${pages}</span>
    <button type="button" class="secondary" disabled=${page >= pages} onClick=${() => onPage(page + 1)}>Next page</button>
  </nav>`;
}
