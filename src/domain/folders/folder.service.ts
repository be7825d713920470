import { CheckConstraintViolationException, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { badRequest, conflict, notFound } from '../../errors/errors.ts';
import { isUuid, parseInput, uuid } from '../validation.ts';
import { timestampIso } from '../views.ts';
import { lockTeamFolders } from './folder-resolver.ts';
import { MAX_FOLDER_DEPTH } from './media-folder.entity.ts';

/**
 * Spec 2.2 and 4.9: the team's media folders.
 *
 * - GET answers a flat list ordered by depth, then name (then id): every parent
 *   comes before its children, so a client builds the tree in one pass by
 *   `parentId`. `fileCount` counts the files directly in the folder.
 * - Structural changes of one team's folders (create, move, delete) are
 *   serialised by a transaction-scoped advisory lock on the team, so depth
 *   checks and the cycle check never see a tree another change is rewriting.
 * - Sibling names are unique by the constraint
 *   `media_folder_team_id_parent_id_name_unique` (NULLS NOT DISTINCT, so also
 *   at the top level); a violation is a 409, never a check-then-insert.
 * - A folder of another team is indistinguishable from a missing one (404).
 */

const MAX_RETENTION_DAYS = 36_500;
const MAX_INT = 2_147_483_647;
// C0/C1 controls and the bidirectional overrides that can disguise a name.
const UNSAFE_NAME_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

const name = z
  .string()
  .trim()
  .min(1, 'must be 1-100 characters')
  .max(100, 'must be 1-100 characters')
  .refine((value) => !UNSAFE_NAME_CHARACTERS.test(value), 'must not contain control characters')
  .refine((value) => value !== '.' && value !== '..', 'must not be . or ..')
  .refine((value) => !value.includes('/'), 'must not contain /');

const rules = {
  parentId: uuid.nullable(),
  retentionDays: z.number().int().min(1).max(MAX_RETENTION_DAYS).nullable(),
  maxFiles: z.number().int().min(1).max(MAX_INT).nullable(),
  defaultPublic: z.boolean().nullable(),
};

export const createSchema = z.strictObject({
  name,
  parentId: rules.parentId.optional(),
  retentionDays: rules.retentionDays.optional(),
  maxFiles: rules.maxFiles.optional(),
  defaultPublic: rules.defaultPublic.optional(),
});

export const updateSchema = z
  .strictObject({
    name: name.optional(),
    parentId: rules.parentId.optional(),
    retentionDays: rules.retentionDays.optional(),
    maxFiles: rules.maxFiles.optional(),
    defaultPublic: rules.defaultPublic.optional(),
  })
  .refine((value) => Object.keys(value).length > 0, 'The body must change at least one field.');

export type FolderUpdate = z.output<typeof updateSchema>;

export interface FolderRecord {
  id: string;
  name: string;
  parentId: string | null;
  depth: number;
  retentionDays: number | null;
  maxFiles: number | null;
  defaultPublic: boolean | null;
  /** Files directly in the folder. */
  fileCount: number;
  createdAt: string;
  updatedAt: string;
}

export interface FolderDeletion {
  deleted: string;
  /** Files that were directly in the folder, now in its parent (or in no folder). */
  movedFiles: number;
  /** Direct subfolders, now children of the parent (their subtrees came along). */
  movedFolders: number;
}

interface FolderRow {
  id: string;
  name: string;
  parent_id: string | null;
  depth: number;
  retention_days: number | null;
  max_files: number | null;
  default_public: boolean | null;
  file_count: string | number;
  created_at: Date | string;
  updated_at: Date | string;
}

const SELECT_FOLDERS = `
select f.id, f.name, f.parent_id, f.depth, f.retention_days, f.max_files, f.default_public, f.created_at, f.updated_at,
       (select count(*) from media_file m where m.team_id = f.team_id and m.folder_id = f.id) as file_count
  from media_folder f`;

/** Ids and depths of a folder and all its descendants. */
const SUBTREE = `
with recursive subtree as (
  select id, depth from media_folder where id = ? and team_id = ?
  union all
  select c.id, c.depth from media_folder c join subtree s on c.parent_id = s.id
)`;

function toRecord(row: FolderRow): FolderRecord {
  return {
    id: row.id,
    name: row.name,
    parentId: row.parent_id,
    depth: Number(row.depth),
    retentionDays: row.retention_days,
    maxFiles: row.max_files,
    defaultPublic: row.default_public,
    fileCount: Number(row.file_count),
    createdAt: timestampIso(row.created_at),
    updatedAt: timestampIso(row.updated_at),
  };
}

interface LockedFolder {
  id: string;
  name: string;
  parentId: string | null;
  depth: number;
}

async function findLocked(em: EntityManager, teamId: string, folderId: string, what = 'folder'): Promise<LockedFolder> {
  if (!isUuid(folderId)) throw notFound(what, folderId);
  const rows = await em.execute<{ id: string; name: string; parent_id: string | null; depth: number }[]>(
    'select id, name, parent_id, depth from media_folder where id = ? and team_id = ? for update',
    [folderId, teamId],
  );
  const row = rows[0];
  if (!row) throw notFound(what, folderId);
  return { id: row.id, name: row.name, parentId: row.parent_id, depth: Number(row.depth) };
}

function duplicateName(error: unknown, folderName: string | undefined): never {
  if (error instanceof UniqueConstraintViolationException) {
    throw conflict('A folder with this name already exists in the parent folder', folderName);
  }
  // The depth check of the table backs up the service's own check.
  if (error instanceof CheckConstraintViolationException) throw badRequest(`Folders nest at most ${MAX_FOLDER_DEPTH} levels`, 'parentId');
  throw error;
}

export class FolderService {
  private readonly orm: MikroORM;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  /** All folders of the team, flat, parents before children (depth, then name). */
  async list(teamId: string): Promise<FolderRecord[]> {
    const rows = await this.orm.em.fork().execute<FolderRow[]>(`${SELECT_FOLDERS} where f.team_id = ? order by f.depth, f.name, f.id`, [teamId]);
    return rows.map(toRecord);
  }

  async get(em: EntityManager, teamId: string, folderId: string): Promise<FolderRecord> {
    const rows = await em.execute<FolderRow[]>(`${SELECT_FOLDERS} where f.id = ? and f.team_id = ?`, [folderId, teamId]);
    if (!rows[0]) throw notFound('folder', folderId);
    return toRecord(rows[0]);
  }

  async create(teamId: string, input: unknown): Promise<FolderRecord> {
    const data = parseInput(createSchema, input);
    try {
      return await this.orm.em.fork().transactional(async (em) => {
        await lockTeamFolders(em, teamId);
        const parent = data.parentId ? await findLocked(em, teamId, data.parentId, 'parent folder') : null;
        const depth = parent ? parent.depth + 1 : 1;
        if (depth > MAX_FOLDER_DEPTH) throw badRequest(`Folders nest at most ${MAX_FOLDER_DEPTH} levels`, 'parentId');
        const inserted = await em.execute<{ id: string }[]>(
          `insert into media_folder (id, team_id, parent_id, name, depth, retention_days, max_files, default_public, created_at, updated_at)
           values (gen_random_uuid(), ?, ?, ?, ?, ?, ?, ?, now(), now()) returning id`,
          [teamId, parent?.id ?? null, data.name, depth, data.retentionDays ?? null, data.maxFiles ?? null, data.defaultPublic ?? null],
        );
        return this.get(em, teamId, inserted[0]!.id);
      });
    } catch (error) {
      duplicateName(error, data.name);
    }
  }

  /** Renames, changes rules, or moves (parentId) a folder with its whole subtree. */
  async update(teamId: string, folderId: string, input: unknown): Promise<FolderRecord> {
    const data = parseInput(updateSchema, input);
    try {
      return await this.orm.em.fork().transactional(async (em) => {
        await lockTeamFolders(em, teamId);
        const folder = await findLocked(em, teamId, folderId);
        const sets: string[] = [];
        const params: unknown[] = [];
        if (data.parentId !== undefined && data.parentId !== folder.parentId) {
          await this.shiftForMove(em, teamId, folder, data.parentId);
          sets.push('parent_id = ?');
          params.push(data.parentId);
        }
        // One statement: a move and a rename together are checked against the new siblings only.
        for (const [field, column] of [
          ['name', 'name'],
          ['retentionDays', 'retention_days'],
          ['maxFiles', 'max_files'],
          ['defaultPublic', 'default_public'],
        ] as const) {
          if (data[field] === undefined) continue;
          sets.push(`${column} = ?`);
          params.push(data[field]);
        }
        await em.execute(`update media_folder set ${[...sets, 'updated_at = now()'].join(', ')} where id = ?`, [...params, folder.id]);
        return this.get(em, teamId, folder.id);
      });
    } catch (error) {
      duplicateName(error, data.name);
    }
  }

  /** Checks a move of the folder under `parentId` and shifts the depths of its subtree. */
  private async shiftForMove(em: EntityManager, teamId: string, folder: LockedFolder, parentId: string | null): Promise<void> {
    const subtree = await em.execute<{ id: string; depth: number }[]>(`${SUBTREE} select id, depth from subtree`, [folder.id, teamId]);
    let newDepth = 1;
    if (parentId !== null) {
      if (subtree.some((row) => row.id === parentId)) throw badRequest('A folder cannot be moved into itself or one of its subfolders', 'parentId');
      newDepth = (await findLocked(em, teamId, parentId, 'parent folder')).depth + 1;
    }
    const deepest = Math.max(...subtree.map((row) => Number(row.depth)));
    if (newDepth + (deepest - folder.depth) > MAX_FOLDER_DEPTH) {
      throw badRequest(`Folders nest at most ${MAX_FOLDER_DEPTH} levels; the moved folder's subfolders would go deeper`, 'parentId');
    }
    const shift = newDepth - folder.depth;
    if (shift !== 0) await em.execute(`${SUBTREE} update media_folder set depth = depth + ? where id in (select id from subtree)`, [folder.id, teamId, shift]);
  }

  /**
   * Moves the folder's files and direct subfolders (with their subtrees, one
   * level up) to its parent, then deletes it; all or nothing. A subfolder whose
   * name is taken at the parent makes the whole delete a 409.
   */
  async delete(teamId: string, folderId: string): Promise<FolderDeletion> {
    try {
      return await this.orm.em.fork().transactional(async (em) => {
        await lockTeamFolders(em, teamId);
        // The row lock also makes concurrent uploads into this folder wait, so none is left behind.
        const folder = await findLocked(em, teamId, folderId);
        // A subfolder may share the folder's own name; the folder steps aside before they move up.
        await em.execute('update media_folder set name = ? where id = ?', [`\u0001deleting ${folder.id}`, folder.id]);
        const files = await em.execute<{ affectedRows: number }>(
          'update media_file set folder_id = ?, updated_at = now() where team_id = ? and folder_id = ?',
          [folder.parentId, teamId, folder.id],
          'run',
        );
        await em.execute(
          `${SUBTREE} update media_folder set depth = depth - 1 where id in (select id from subtree) and id <> ?`,
          [folder.id, teamId, folder.id],
        );
        const folders = await em.execute<{ affectedRows: number }>(
          'update media_folder set parent_id = ?, updated_at = now() where team_id = ? and parent_id = ?',
          [folder.parentId, teamId, folder.id],
          'run',
        );
        await em.execute('delete from media_folder where id = ?', [folder.id]);
        return { deleted: folder.id, movedFiles: files.affectedRows, movedFolders: folders.affectedRows };
      });
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) {
        throw conflict('A subfolder has the same name as a folder in the parent folder; rename it first');
      }
      throw error;
    }
  }
}
