import { useCallback, useEffect, useState } from 'preact/hooks';

// The team's folders (a flat list, parents before children) and the tree built from it.

export function useFolders(call, teamId) {
  const [folders, setFolders] = useState([]);
  const [error, setError] = useState(null);
  const reload = useCallback(async () => {
    try {
      const answer = await call('GET', `/v1/cdn/media/${teamId}/folders`);
      setFolders(answer.folders);
      setError(null);
    } catch (failure) {
      setError(failure);
    }
  }, [call, teamId]);
  useEffect(() => {
    void reload();
  }, [reload]);
  return { folders, error, reload };
}

/** Roots with their `children`, in the API's order. */
export function folderTree(folders) {
  const nodes = new Map(folders.map((folder) => [folder.id, { ...folder, children: [] }]));
  const roots = [];
  for (const node of nodes.values()) {
    const parent = node.parentId ? nodes.get(node.parentId) : null;
    (parent ? parent.children : roots).push(node);
  }
  return roots;
}

/** The folder's path of names, `logs / 2026`. */
export function folderPath(folders, folderId) {
  const byId = new Map(folders.map((folder) => [folder.id, folder]));
  const names = [];
  for (let folder = byId.get(folderId); folder; folder = byId.get(folder.parentId)) names.unshift(folder.name);
  return names.join(' / ');
}

/** The folder and every folder below it (a folder cannot move into these). */
export function subtreeIds(folders, folderId) {
  const ids = new Set([folderId]);
  for (const folder of folders) if (folder.parentId && ids.has(folder.parentId)) ids.add(folder.id);
  return ids;
}
