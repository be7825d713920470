import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { multipartUpload } from './multipart-upload.js';
import { TUS_THRESHOLD_BYTES, tusUpload } from './tus-upload.js';

// The files waiting, going and gone: two at a time, each with its progress, cancel and retry.
// Small files go as one multipart request; files from TUS_THRESHOLD_BYTES up go through tus.

const AT_ONCE = 2;
let nextId = 1;

/** An entry's upload options: a file from a dropped folder goes into that folder below the chosen one. */
function optionsFor(entry, options) {
  if (!entry.directory) return options;
  const folder = [options.folderPath, entry.directory].filter(Boolean).join('/');
  return { ...options, folderId: null, folder };
}

export function useUploadQueue({ token, teamId, onUploaded }) {
  const [items, setItems] = useState([]);
  const running = useRef(new Map());

  const patch = useCallback((id, changes) => setItems((list) => list.map((item) => (item.id === id ? { ...item, ...changes } : item))), []);

  const add = useCallback((entries, options) => {
    const added = entries.map((entry) => ({
      id: nextId++,
      file: entry.file,
      fileName: entry.file.name,
      options: optionsFor(entry, options),
      status: 'queued',
      loaded: 0,
      total: entry.file.size,
      resumable: entry.file.size >= TUS_THRESHOLD_BYTES,
      error: null,
    }));
    setItems((list) => [...list, ...added]);
  }, []);

  const start = useCallback((item) => {
    const upload = item.resumable ? tusUpload : multipartUpload;
    const handle = upload({
      token, teamId, file: item.file, fileName: item.fileName, options: item.options,
      onProgress: (loaded, total) => patch(item.id, { loaded, total }),
    });
    running.current.set(item.id, handle);
    handle.promise
      .then((result) => {
        patch(item.id, { status: 'done', loaded: item.total, result });
        onUploaded?.(result);
      })
      .catch((error) => patch(item.id, error?.name === 'AbortError' ? { status: 'cancelled' } : { status: 'failed', error }))
      .finally(() => running.current.delete(item.id));
  }, [token, teamId, patch, onUploaded]);

  // Starts queued files while fewer than AT_ONCE are going.
  useEffect(() => {
    const going = items.filter((item) => item.status === 'uploading').length;
    const next = items.filter((item) => item.status === 'queued').slice(0, Math.max(0, AT_ONCE - going));
    if (!next.length) return;
    setItems((list) => list.map((item) => (next.some((starting) => starting.id === item.id) ? { ...item, status: 'uploading' } : item)));
    for (const item of next) start(item);
  }, [items, start]);

  return {
    items,
    add,
    cancel: (id) => {
      const handle = running.current.get(id);
      if (handle) handle.cancel();
      else patch(id, { status: 'cancelled' });
    },
    retry: (id) => patch(id, { status: 'queued', loaded: 0, error: null }),
    clearFinished: () => setItems((list) => list.filter((item) => item.status === 'queued' || item.status === 'uploading')),
  };
}
