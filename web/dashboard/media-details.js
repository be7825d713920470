import { useEffect, useRef, useState } from 'preact/hooks';
import { copyText } from './copy-text.js';
import { folderPath } from './folders.js';
import { formatBytes, formatDate, kindOf } from './format.js';
import { html } from './html.js';
import { announce } from './notices.js';
import { refusalText } from './refusal-words.js';
import { TagChips, TagInput } from './tag-input.js';
import { TextPreview } from './text-preview.js';
import { Thumbnail } from './type-icon.js';

// One file: what it is, its link (signed for an hour when private), and every change the member
// may make: rename, visibility, folder, tags, delete.

export function MediaDetails({ file, folders, call, teamId, canEdit, canDelete, onChanged, onDeleted, onClose }) {
  const [link, setLink] = useState(null);
  const [error, setError] = useState(null);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const heading = useRef(null);
  const base = `/v1/cdn/media/${teamId}`;

  useEffect(() => {
    setLink(null);
    setError(null);
    setConfirmDelete(false);
    heading.current?.focus();
  }, [file.id]);
  const uploader = useUploader(call, base, file.id);

  const update = async (body, done) => {
    setError(null);
    try {
      const changed = await call('PATCH', `${base}/update/${file.id}`, { body });
      onChanged(changed);
      setLink(null);
      announce(done);
    } catch (failure) {
      setError(refusalText(failure));
    }
  };

  const copyLink = async () => {
    setError(null);
    try {
      const { url } = await call('GET', `${base}/${file.id}`);
      setLink(url);
      await copyText(url, file.public ? 'Link' : 'Signed link (valid for one hour)');
    } catch (failure) {
      setError(refusalText(failure));
    }
  };

  const remove = async () => {
    try {
      await call('DELETE', `${base}/delete/${file.id}`);
      announce(`${file.fileName} deleted`);
      onDeleted(file.id);
    } catch (failure) {
      setError(refusalText(failure));
    }
  };

  const rename = (event) => {
    event.preventDefault();
    const fileName = event.currentTarget.elements.namedItem('rename').value.trim();
    if (fileName && fileName !== file.fileName) void update({ fileName }, `Renamed to ${fileName}`);
  };

  return html`<aside class="details" aria-labelledby="details-heading"
    onKeyDown=${(event) => event.key === 'Escape' && onClose()}>
    <div class="details-head">
      <h2 id="details-heading" tabindex="-1" ref=${heading}>${file.fileName}</h2>
      <button type="button" class="secondary" onClick=${onClose}>Close<span class="visually-hidden"> details</span></button>
    </div>
    <${Thumbnail} file=${file} />
    ${error ? html`<p role="alert" class="error">${error}</p>` : ''}
    <dl class="facts">
      <dt>Size</dt><dd>${formatBytes(file.size)}</dd>
      <dt>Type</dt><dd>${file.contentType}</dd>
      <dt>Uploaded</dt><dd>${formatDate(file.createdAt)}</dd>
      <dt>Uploaded by</dt><dd class="uploaded-by">${uploaderWords(uploader)}</dd>
      <dt>Changed</dt><dd>${formatDate(file.updatedAt)}</dd>
      <dt>Folder</dt><dd>${file.folderId ? folderPath(folders, file.folderId) || 'A folder' : 'None'}</dd>
      <dt>Visibility</dt><dd>${file.public ? 'Public: anyone with the link' : 'Private: signed links only'}</dd>
      <dt>Tags</dt><dd>${file.tags.length ? file.tags.join(', ') : 'None'}</dd>
    </dl>
    <div class="details-actions">
      <button type="button" onClick=${copyLink}>${file.public ? 'Copy link' : 'Copy signed link (1 hour)'}</button>
      ${link ? html`<label for="details-link" class="visually-hidden">Link</label>
        <input id="details-link" class="link-field" readonly value=${link} onFocus=${(event) => event.currentTarget.select()} />` : ''}
    </div>
    ${kindOf(file.contentType) === 'text' ? html`<${TextPreview} call=${call} teamId=${teamId} file=${file} />` : ''}
    ${canEdit ? html`<div class="details-edit">
      <form onSubmit=${rename} key=${`rename-${file.id}`}>
        <label for="rename">File name</label>
        <div class="inline-field"><input id="rename" name="rename" defaultValue=${file.fileName} maxlength="255" required /><button type="submit" class="secondary">Rename file</button></div>
      </form>
      <label class="checkbox"><input type="checkbox" checked=${file.public}
        onChange=${(event) => update({ public: event.currentTarget.checked }, event.currentTarget.checked ? 'The file is public' : 'The file is private')} /> Public</label>
      <label for="details-folder">Folder</label>
      <select id="details-folder" value=${file.folderId ?? ''} onChange=${(event) => update({ folderId: event.currentTarget.value || null }, 'File moved')}>
        <option value="">No folder</option>
        ${folders.map((folder) => html`<option key=${folder.id} value=${folder.id}>${folderPath(folders, folder.id)}</option>`)}
      </select>
      <${TagChips} label="Tags of the file" tags=${file.tags} onRemove=${(tag) => update({ tags: file.tags.filter((other) => other !== tag) }, `Tag ${tag} removed`)} />
      <${TagInput} id="details-tag" label="Add a tag" call=${call} teamId=${teamId}
        onAdd=${(tag) => !file.tags.includes(tag) && update({ tags: [...file.tags, tag] }, `Tag ${tag} added`)} />
    </div>` : ''}
    ${canDelete ? (confirmDelete
      ? html`<p class="confirm">Delete ${file.fileName} for good?
          <button type="button" class="danger" onClick=${remove}>Delete file</button>
          <button type="button" class="secondary" onClick=${() => setConfirmDelete(false)}>Keep it</button></p>`
      : html`<button type="button" class="secondary" onClick=${() => setConfirmDelete(true)}>Delete…</button>`) : ''}
  </aside>`;
}

/** Who uploaded the file (the single-media read's uploadedBy): undefined while asking, null for a member or a deleted key. */
function useUploader(call, base, fileId) {
  const [uploader, setUploader] = useState(undefined);
  useEffect(() => {
    let live = true;
    setUploader(undefined);
    call('GET', `${base}/${fileId}`).then((answer) => live && setUploader(answer.uploadedBy ?? null), () => live && setUploader('unknown'));
    return () => {
      live = false;
    };
  }, [call, base, fileId]);
  return uploader;
}

function uploaderWords(uploader) {
  if (uploader === undefined) return '…';
  if (uploader === 'unknown') return 'Not known';
  if (uploader === null) return 'A team member (or a key since deleted)';
  return uploader.name ? `API key ${uploader.name}` : 'An API key without a description';
}
