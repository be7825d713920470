import { html } from './html.js';
import { folderTree } from './folders.js';

// The folders as a tree of buttons: choosing one shows the files directly in it.
// `selected`: a folder id, 'none' (files in no folder) or null (every file).

export function FolderTree({ folders, selected, onSelect }) {
  const choice = (value, label, count) => html`<button type="button" class="folder-choice" aria-current=${selected === value ? 'true' : undefined}
    onClick=${() => onSelect(value)}>
    <span class="folder-name">${label}</span>${count !== undefined ? html`<span class="muted count">${count}</span>` : ''}
  </button>`;
  const branch = (nodes) => html`<ul class="folder-branch">
    ${nodes.map((node) => html`<li key=${node.id}>
      ${choice(node.id, node.name, node.fileCount)}
      ${node.children.length ? branch(node.children) : ''}
    </li>`)}
  </ul>`;
  return html`<nav class="folder-tree" aria-label="Folders">
    <ul class="folder-branch">
      <li>${choice(null, 'All files')}</li>
      <li>${choice('none', 'Not in a folder')}</li>
    </ul>
    ${branch(folderTree(folders))}
  </nav>`;
}
