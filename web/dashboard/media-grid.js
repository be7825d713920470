import { html } from './html.js';
import { formatBytes, formatDate } from './format.js';
import { moveBetweenTiles } from './grid-keys.js';
import { Thumbnail } from './type-icon.js';

// The files as tiles (fixed square boxes: a thumbnail that arrives later moves nothing) or as a
// table. Each has its own checkbox for bulk actions; opening one shows its details.

export function MediaGrid({ items, selected, onToggle, onOpen, openId }) {
  return html`<ul class="media-grid" aria-label="Files" onKeyDown=${moveBetweenTiles}>
    ${items.map((file) => html`<li key=${file.id} class="tile" data-selected=${selected.has(file.id) ? 'true' : undefined}>
      <input type="checkbox" class="tile-select" checked=${selected.has(file.id)} aria-label=${`Select ${file.fileName}`}
        onChange=${() => onToggle(file.id)} />
      <button type="button" class="tile-open" data-file=${file.id} aria-expanded=${openId === file.id ? 'true' : 'false'} onClick=${() => onOpen(file.id)}>
        <${Thumbnail} file=${file} />
        <span class="tile-name">${file.fileName}</span>
        <span class="tile-meta muted">${formatBytes(file.size)}${file.public ? '' : ' · private'}</span>
      </button>
    </li>`)}
  </ul>`;
}

export function MediaList({ items, selected, onToggle, onOpen, openId }) {
  return html`<table class="media-list">
    <caption class="visually-hidden">Files</caption>
    <thead><tr><th scope="col"><span class="visually-hidden">Selected</span></th><th scope="col">Name</th><th scope="col">Type</th>
      <th scope="col">Size</th><th scope="col">Uploaded</th><th scope="col">Visibility</th></tr></thead>
    <tbody>
      ${items.map((file) => html`<tr key=${file.id} data-selected=${selected.has(file.id) ? 'true' : undefined}>
        <td><input type="checkbox" checked=${selected.has(file.id)} aria-label=${`Select ${file.fileName}`} onChange=${() => onToggle(file.id)} /></td>
        <td><button type="button" class="link-button" data-file=${file.id} aria-expanded=${openId === file.id ? 'true' : 'false'} onClick=${() => onOpen(file.id)}>${file.fileName}</button></td>
        <td>${file.contentType.split(';')[0]}</td>
        <td>${formatBytes(file.size)}</td>
        <td>${formatDate(file.createdAt)}</td>
        <td>${file.public ? 'Public' : 'Private'}</td>
      </tr>`)}
    </tbody>
  </table>`;
}
