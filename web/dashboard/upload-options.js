import { html } from './html.js';
import { folderPath } from './folders.js';
import { TagChips, TagInput } from './tag-input.js';

// What every file added from now on is uploaded with.

export function UploadOptions({ options, onChange, folders, call, teamId }) {
  const chooseFolder = (folderId) => onChange({
    ...options,
    folderId: folderId || null,
    // Dropped folders go below the chosen folder, by path (the API creates what is missing).
    folderPath: folderId ? folderPath(folders, folderId).split(' / ').join('/') : '',
  });
  return html`<section class="upload-options card" aria-labelledby="options-heading">
    <h2 id="options-heading">Upload options</h2>
    <div class="option-grid">
      <div>
        <label for="upload-folder">Folder</label>
        <select id="upload-folder" value=${options.folderId ?? ''} onChange=${(event) => chooseFolder(event.currentTarget.value)}>
          <option value="">No folder</option>
          ${folders.map((folder) => html`<option key=${folder.id} value=${folder.id}>${folderPath(folders, folder.id)}</option>`)}
        </select>
      </div>
      <div>
        <label for="upload-visibility">Visibility</label>
        <select id="upload-visibility" value=${options.visibility} onChange=${(event) => onChange({ ...options, visibility: event.currentTarget.value })}>
          <option value="default">The folder's default (public without one)</option>
          <option value="public">Public: anyone with the link</option>
          <option value="private">Private: signed links only</option>
        </select>
      </div>
      <div>
        <${TagInput} id="upload-tag" label="Tags" call=${call} teamId=${teamId}
          onAdd=${(tag) => !options.tags.includes(tag) && options.tags.length < 20 && onChange({ ...options, tags: [...options.tags, tag] })} />
        <${TagChips} label="Tags of the uploads" tags=${options.tags} onRemove=${(tag) => onChange({ ...options, tags: options.tags.filter((other) => other !== tag) })} />
      </div>
    </div>
  </section>`;
}
