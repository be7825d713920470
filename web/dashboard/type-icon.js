import { html } from './html.js';
import { extensionOf, kindOf } from './format.js';

// What stands in for a thumbnail: the kind of file and its extension, in the same box as a
// thumbnail would take.

const KIND_LABELS = { image: 'Image', video: 'Video', audio: 'Audio', text: 'Text', archive: 'Archive', document: 'Document', other: 'File' };

export function TypeIcon({ file }) {
  const kind = kindOf(file.contentType);
  return html`<span class="type-icon" data-kind=${kind} aria-hidden="true">
    <span class="type-icon-kind">${KIND_LABELS[kind]}</span>
    <span class="type-icon-extension">${extensionOf(file.fileName)}</span>
  </span>`;
}

export function Thumbnail({ file }) {
  return html`<span class="thumb">
    ${file.thumbnailUrl ? html`<img src=${file.thumbnailUrl} alt="" loading="lazy" decoding="async" />` : html`<${TypeIcon} file=${file} />`}
  </span>`;
}
