// The files of a drop, folders included (walked with the File System entries API), and of a
// folder chosen with the picker: each with the folder path it had below what was chosen.

/** Must be called during the drop event: the items are gone after it. */
export function droppedEntries(dataTransfer) {
  const entries = [...(dataTransfer.items ?? [])]
    .filter((item) => item.kind === 'file')
    .map((item) => item.webkitGetAsEntry?.() ?? null);
  if (entries.length && entries.every(Boolean)) return Promise.all(entries.map((entry) => walk(entry, ''))).then((lists) => lists.flat());
  return Promise.resolve([...dataTransfer.files].map((file) => ({ file, directory: '' })));
}

async function walk(entry, directory) {
  if (entry.isFile) return [{ file: await new Promise((resolve, reject) => entry.file(resolve, reject)), directory }];
  const inside = directory ? `${directory}/${entry.name}` : entry.name;
  const reader = entry.createReader();
  const children = [];
  // readEntries answers in batches (100 in Chromium) until an empty one.
  for (;;) {
    const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
    if (!batch.length) break;
    children.push(...batch);
  }
  const lists = await Promise.all(children.map((child) => walk(child, inside)));
  return lists.flat();
}

/** Files from an input (`webkitdirectory` gives each its relative path). */
export function pickedEntries(fileList) {
  return [...fileList].map((file) => {
    const path = file.webkitRelativePath ?? '';
    return { file, directory: path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '' };
  });
}

/** A pasted screenshot arrives as image.png: give it a name that says when. */
export function pastedEntries(clipboardData) {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return [...(clipboardData?.files ?? [])].map((file, index) => {
    const extension = file.name.includes('.') ? file.name.slice(file.name.lastIndexOf('.')) : '';
    const name = /^image\.\w+$/.test(file.name) ? `pasted-${stamp}${index ? `-${index}` : ''}${extension}` : file.name;
    return { file: name === file.name ? file : new File([file], name, { type: file.type, lastModified: file.lastModified }), directory: '' };
  });
}
