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

/**
 * Serialises changes to one team's folder tree until the transaction ends, so
 * depth and cycle checks see a tree nobody else is changing.
 */
export async function lockTeamFolders(em: EntityManager, teamId: string): Promise<void> {
  await em.execute(`select pg_advisory_xact_lock(hashtextextended('media_folder:' || ?, 0))`, [teamId]);
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
  const existing = await findFolderPath(em, teamId, segments);
  if (existing) return existing;
  // Creating: take the tree lock, so a concurrent move cannot make the new folders' depths wrong.
  await lockTeamFolders(em, teamId);
  let parent: FolderRow | null = null;
  for (const [index, name] of segments.entries()) {
    const parentId: string | null = parent ? parent.id : null;
    const inserted: FolderRow[] = await em.execute<FolderRow[]>(INSERT_FOLDER, [randomUUID(), teamId, parentId, name, index + 1]);
    parent = inserted[0] ?? (await em.execute<FolderRow[]>(FIND_CHILD, [teamId, parentId, name]))[0] ?? null;
    if (!parent) throw new Error(`folder ${name} neither inserted nor found`);
  }
  return { id: parent!.id, defaultPublic: parent!.default_public };
}

/** The folder at `segments` when the whole path exists, else null; one query. */
export async function findFolderPath(em: EntityManager, teamId: string, segments: string[]): Promise<FolderRef | null> {
  const rows = await em.execute<FolderRow[]>(
    `with recursive walk(id, default_public, level) as (
       select id, default_public, 1 from media_folder where team_id = ? and parent_id is null and name = ?
       union all
       select f.id, f.default_public, walk.level + 1 from media_folder f
         join walk on f.parent_id = walk.id
        where f.team_id = ? and f.name = (?::jsonb ->> walk.level))
     select id, default_public from walk where level = ?`,
    // The path goes in as one JSON array; element `level` (0-based) is the name one level below.
    [teamId, segments[0], teamId, JSON.stringify(segments), segments.length],
  );
  const row = rows[0];
  return row ? { id: row.id, defaultPublic: row.default_public } : null;
}
