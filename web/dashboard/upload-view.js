import { useEffect, useState } from 'preact/hooks';
import { droppedEntries, pastedEntries, pickedEntries } from './dropped-files.js';
import { useFolders } from './folders.js';
import { html } from './html.js';
import { announce } from './notices.js';
import { useSession } from './session.js';
import { UploadOptions } from './upload-options.js';
import { UploadList } from './upload-list.js';
import { useUploadQueue } from './upload-queue.js';

// Choose the options first (folder, tags, visibility), then add files: the picker, a folder,
// a drop of files and folders onto the zone, or a paste from the clipboard anywhere on the page.

export function UploadView() {
  const { call, credential } = useSession();
  const teamId = credential.teamId;
  const folders = useFolders(call, teamId);
  const [options, setOptions] = useState({ folderId: null, folderPath: '', tags: [], visibility: 'default' });
  const [dragging, setDragging] = useState(false);
  const queue = useUploadQueue({
    token: credential.token,
    teamId,
    onUploaded: (result) => announce(`${result.fileName} uploaded`),
  });

  const add = (entries) => {
    if (!entries.length) return;
    queue.add(entries, options);
    announce(`${entries.length} ${entries.length === 1 ? 'file' : 'files'} added to the uploads`);
  };

  useEffect(() => {
    const onPaste = (event) => {
      const entries = pastedEntries(event.clipboardData);
      if (!entries.length) return;
      event.preventDefault();
      add(entries);
    };
    document.addEventListener('paste', onPaste);
    return () => document.removeEventListener('paste', onPaste);
  });

  const onDrop = (event) => {
    event.preventDefault();
    setDragging(false);
    void droppedEntries(event.dataTransfer).then(add);
  };

  return html`<div class="upload-view">
    <${UploadOptions} options=${options} onChange=${setOptions} folders=${folders.folders} call=${call} teamId=${teamId} />
    <section class="drop-zone" data-dragging=${dragging ? 'true' : 'false'} aria-labelledby="drop-heading"
      onDragOver=${(event) => {
        event.preventDefault();
        setDragging(true);
      }}
      onDragLeave=${() => setDragging(false)}
      onDrop=${onDrop}>
      <h2 id="drop-heading">Add files</h2>
      <p>Drop files or folders here, paste an image or file (Ctrl+V), or choose them:</p>
      <div class="pickers">
        <label class="picker">Choose files
          <input type="file" multiple onChange=${(event) => {
            add(pickedEntries(event.currentTarget.files));
            event.currentTarget.value = '';
          }} />
        </label>
        <label class="picker">Choose a folder
          <input type="file" webkitdirectory="" onChange=${(event) => {
            add(pickedEntries(event.currentTarget.files));
            event.currentTarget.value = '';
          }} />
        </label>
      </div>
    </section>
    <${UploadList} queue=${queue} />
  </div>`;
}
