import { useState } from 'preact/hooks';
import { folderPath } from './folders.js';
import { html } from './html.js';
import { announce } from './notices.js';
import { refusalText } from './refusal-words.js';
import { TagInput } from './tag-input.js';

// What to do with every selected file at once (POST /bulk, at most 100 ids per call).

const BULK_LIMIT = 100;

export function BulkBar({ selected, folders, call, teamId, canEdit, canDelete, onDone, onClear, onSelectPage }) {
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const count = selected.size;

  const run = async (action, extra, words) => {
    setBusy(true);
    setError(null);
    setConfirmDelete(false);
    const ids = [...selected];
    let affected = 0;
    const failed = [];
    try {
      for (let start = 0; start < ids.length; start += BULK_LIMIT) {
        const answer = await call('POST', `/v1/cdn/media/${teamId}/bulk`, { body: { action, ids: ids.slice(start, start + BULK_LIMIT), ...extra } });
        affected += answer.affected;
        failed.push(...answer.failed);
      }
      announce(`${affected} ${affected === 1 ? 'file' : 'files'} ${words}${failed.length ? `; ${failed.length} could not be: ${failed[0].message}` : ''}`,
        failed.length ? 'error' : 'info');
      onDone(action, new Set(ids.filter((id) => !failed.some((failure) => failure.id === id))));
    } catch (failure) {
      setError(refusalText(failure));
    } finally {
      setBusy(false);
    }
  };

  return html`<section class="bulk-bar" aria-label="Selected files">
    <p class="bulk-count" aria-live="polite">${count ? `${count} selected` : 'None selected'}</p>
    <button type="button" class="secondary" onClick=${onSelectPage}>Select all shown</button>
    ${count ? html`
      <button type="button" class="secondary" onClick=${onClear}>Clear selection</button>
      ${canEdit ? html`
        <button type="button" class="secondary" disabled=${busy} onClick=${() => run('setPublic', { public: true }, 'made public')}>Make public</button>
        <button type="button" class="secondary" disabled=${busy} onClick=${() => run('setPublic', { public: false }, 'made private')}>Make private</button>
        <form class="inline-field" onSubmit=${(event) => {
          event.preventDefault();
          const target = event.currentTarget.elements.namedItem('bulk-folder').value;
          void run('move', { folderId: target || null }, 'moved');
        }}>
          <label for="bulk-folder" class="visually-hidden">Move the selected files into</label>
          <select id="bulk-folder" name="bulk-folder">
            <option value="">No folder</option>
            ${folders.map((folder) => html`<option key=${folder.id} value=${folder.id}>${folderPath(folders, folder.id)}</option>`)}
          </select>
          <button type="submit" class="secondary" disabled=${busy}>Move selected</button>
        </form>
        <${TagInput} id="bulk-tag" label="Tag the selected files" call=${call} teamId=${teamId} onAdd=${(tag) => run('addTags', { tags: [tag] }, `tagged ${tag}`)} />
      ` : ''}
      ${canDelete ? (confirmDelete
        ? html`<span class="confirm">Delete ${count} ${count === 1 ? 'file' : 'files'} for good?
            <button type="button" class="danger" disabled=${busy} onClick=${() => run('delete', {}, 'deleted')}>Delete selected</button>
            <button type="button" class="secondary" onClick=${() => setConfirmDelete(false)}>Keep them</button></span>`
        : html`<button type="button" class="secondary" onClick=${() => setConfirmDelete(true)}>Delete selected…</button>`) : ''}
    ` : ''}
    ${error ? html`<p role="alert" class="error">${error}</p>` : ''}
  </section>`;
}
