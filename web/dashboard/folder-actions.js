import { useState } from 'preact/hooks';
import { html } from './html.js';
import { folderPath, subtreeIds } from './folders.js';
import { announce } from './notices.js';
import { refusalText } from './refusal-words.js';

// Create a folder (in the chosen one, or at the top), and rename, move or delete the chosen one.
// Name fields take defaultValue, not value: a refresh of the list while typing must not undo the typing.
// The service keeps the rules: names unique among siblings (409), at most 5 levels (400), a
// deleted folder's files and subfolders move up to its parent.

export function FolderActions({ call, teamId, folders, selected, onChanged, onSelect, canEdit }) {
  const [error, setError] = useState(null);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const folder = folders.find((candidate) => candidate.id === selected) ?? null;
  if (!canEdit) return '';

  const run = async (work, done) => {
    setError(null);
    try {
      const answer = await work();
      await onChanged();
      announce(done(answer));
      return true;
    } catch (failure) {
      setError(refusalText(failure));
      return false;
    }
  };
  const base = `/v1/cdn/media/${teamId}/folders`;

  const create = async (event) => {
    event.preventDefault();
    const form = event.currentTarget;
    const name = form.elements.namedItem('folder-name').value.trim();
    if (!name) return;
    if (await run(() => call('POST', base, { body: { name, parentId: folder?.id ?? null } }), (created) => `Folder ${created.name} created`)) form.reset();
  };
  const rename = async (event) => {
    event.preventDefault();
    const name = event.currentTarget.elements.namedItem('folder-rename').value.trim();
    if (name) await run(() => call('PATCH', `${base}/${folder.id}`, { body: { name } }), () => `Folder renamed to ${name}`);
  };
  const move = async (event) => {
    event.preventDefault();
    const target = event.currentTarget.elements.namedItem('folder-parent').value;
    await run(() => call('PATCH', `${base}/${folder.id}`, { body: { parentId: target || null } }), () => 'Folder moved');
  };
  const remove = async () => {
    setConfirmDelete(false);
    if (await run(() => call('DELETE', `${base}/${folder.id}`), (answer) => `Folder deleted; ${answer.movedFiles} files and ${answer.movedFolders} folders moved up`)) {
      onSelect(folder.parentId ?? null);
    }
  };

  const excluded = folder ? subtreeIds(folders, folder.id) : new Set();
  return html`<details class="folder-actions">
    <summary>Manage folders</summary>
    ${error ? html`<p role="alert" class="error">${error}</p>` : ''}
    <form onSubmit=${create}>
      <label for="folder-name">New folder ${folder ? html`in ${folder.name}` : 'at the top level'}</label>
      <div class="inline-field"><input id="folder-name" name="folder-name" maxlength="100" required /><button type="submit" class="secondary">Create folder</button></div>
    </form>
    ${folder ? html`
      <form onSubmit=${rename} key=${`rename-${folder.id}`}>
        <label for="folder-rename">Rename ${folder.name}</label>
        <div class="inline-field"><input id="folder-rename" name="folder-rename" maxlength="100" defaultValue=${folder.name} required /><button type="submit" class="secondary">Rename folder</button></div>
      </form>
      <form onSubmit=${move} key=${`move-${folder.id}`}>
        <label for="folder-parent">Move ${folder.name} into</label>
        <div class="inline-field">
          <select id="folder-parent" name="folder-parent">
            <option value="">The top level</option>
            ${folders.filter((candidate) => !excluded.has(candidate.id)).map((candidate) => html`<option key=${candidate.id} value=${candidate.id}
              selected=${candidate.id === folder.parentId}>${folderPath(folders, candidate.id)}</option>`)}
          </select>
          <button type="submit" class="secondary">Move folder</button>
        </div>
      </form>
      ${confirmDelete
        ? html`<p class="confirm">Delete ${folder.name}? Its files and folders move up one level.
            <button type="button" class="danger" onClick=${remove}>Delete folder</button>
            <button type="button" class="secondary" onClick=${() => setConfirmDelete(false)}>Keep it</button></p>`
        : html`<button type="button" class="secondary" onClick=${() => setConfirmDelete(true)}>Delete ${folder.name}…</button>`}
    ` : ''}
  </details>`;
}
