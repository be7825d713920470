import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../../errors/errors.ts';

export interface FolderRef {
  id: string;
  defaultPublic: boolean | null;
}

// Sibling names are unique (NULLS NOT DISTINCT), so concurrent creators of one path meet
// on this constraint: the second waits for the first to commit, then finds its row.
const INSERT_FOLDER = `
insert into media_folder (id, team_id, parent_id, name, depth, created_at, updated_at)
values (?, ?, ?, ?, ?, now(), now())
on conflict on constraint media_folder_team_id_parent_id_name_unique do nothing
returning id, default_public`;

const FIND_CHILD = `
select id, default_public from media_folder
 where team_id = ? and parent_id is not distinct from ? and name = ?`;

interface FolderRow {
  id: string;
  default_public: boolean | null;
}

/** A folder of the team by id, or 404 (also for another team's folder). */
export async function findFolder(em: EntityManager, teamId: string, folderId: string): Promise<FolderRef> {
  const rows = await em.execute<FolderRow[]>('select id, default_public from media_folder where id = ? and team_id = ?', [folderId, teamId]);
  const row = rows[0];
  if (!row) throw notFound('folder', folderId);
  return { id: row.id, defaultPublic: row.default_public };
}

/** Finds the folder at `segments`, creating the missing ones; safe under concurrent uploads on any instance. */
export async function ensureFolderPath(em: EntityManager, teamId: string, segments: string[]): Promise<FolderRef> {
  let parent: FolderRow | null = null;
  for (const [index, name] of segments.entries()) {
    const parentId: string | null = parent ? parent.id : null;
    const inserted: FolderRow[] = await em.execute<FolderRow[]>(INSERT_FOLDER, [randomUUID(), teamId, parentId, name, index + 1]);
    parent = inserted[0] ?? (await em.execute<FolderRow[]>(FIND_CHILD, [teamId, parentId, name]))[0] ?? null;
    if (!parent) throw new Error(`folder ${name} neither inserted nor found`);
  }
  return { id: parent!.id, defaultPublic: parent!.default_public };
}
