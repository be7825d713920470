import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { fileAboveSizeLimit, notFound, teamStorageFull } from '../../errors/errors.ts';
import type { ObjectStore } from '../../storage/object-store.ts';
import type { Paging } from '../paging.ts';
import type { SignedLinks } from '../media/signed-links.ts';
import { defaultPlanLimits } from '../plans/plan-limits.ts';
import type { Actor } from '../actor.ts';
import { recordTeamLog } from '../team-logs/team-log.service.ts';
import { isUuid } from '../validation.ts';
import type { FileKind } from './file-kinds.ts';
import { removeDeletedObjects } from '../storage-removals/backup-guard.ts';

/** A stored upload of a team or to-do file whose name and type are settled: what its commit writes. */
export interface NewAttachedFile {
  teamId: string;
  fileId: string;
  storageKey: string;
  /** The acting key's member; null for a key acting as the owner (the owner's member is recorded). */
  uploaderMemberId: string | null;
  /** The member (team files) or to-do (to-do files) the file is for; null: a team file for nobody in particular. */
  attachId: string | null;
  fileName: string;
  contentType: string;
  size: number;
  hash: string;
}

/** Who may see which files: every file of the kind, or those uploaded by or for `memberId`. */
export interface FileVisibility {
  all: boolean;
  memberId: string | null;
}

export interface AttachedFileFilters {
  uploadTeamMemberId?: string;
  targetTeamMemberId?: string;
  /** To-do files: the to-do whose files are listed. */
  todoId?: string;
}

interface FileRow {
  id: string;
  team_id: string;
  upload_team_member_id: string | null;
  attach_id: string | null;
  file_name: string;
  storage_key: string;
  size: string | number;
  content_type: string;
  hash: string;
  created_at: Date | string;
  updated_at: Date | string;
}

export interface DeletedFile {
  id: string;
  storageKey: string;
  size: number;
}

export interface AttachedFileServiceDeps {
  orm: MikroORM;
  store: ObjectStore;
  links: SignedLinks;
  /** Base of the preview links (PUBLIC_URL): the service serves the signed content route itself. */
  publicUrl: string;
  logger: Pick<Logger, 'error'>;
}

const COMMIT_FILE = 'select o_outcome as outcome, o_used_storage as used_storage, o_max_file as max_file from team_storage_commit_file(?, ?, ?, ?, ?)';

function columns(kind: FileKind): string {
  return `id, team_id, upload_team_member_id, ${kind.attachColumn} as attach_id, file_name, storage_key, size, content_type, hash, created_at, updated_at`;
}

/** The signed path of a file's content (without a leading slash), as the content route rebuilds it. */
export function contentPath(kind: FileKind, teamId: string, fileId: string): string {
  return `v1/teams/${teamId}/${kind.contentSegment}/${fileId}/content`;
}

/**
 * Team files and to-do files (spec 2.4): their commit into the team's one
 * storage counter (team_storage_commit_file, Migration20261124050000TeamFiles),
 * lists, reads with a signed preview link, and deletes that free their bytes.
 */
export class AttachedFileService {
  private readonly deps: AttachedFileServiceDeps;

  constructor(deps: AttachedFileServiceDeps) {
    this.deps = deps;
  }

  /**
   * Counts the stored file in the team's storage and writes its row and its log
   * entry, in one transaction: 402 when it does not fit (or is above the file
   * size limit), 404 when the member or to-do it is for is gone; nothing written then.
   */
  async commit(kind: FileKind, file: NewAttachedFile) {
    return this.deps.orm.em.fork().transactional(async (em) => {
      const [outcome] = await em.execute<{ outcome: string; used_storage: string | number | null; max_file: string | number | null }[]>(COMMIT_FILE, [
        file.teamId, file.fileId, file.size, defaultPlanLimits.maxTeamStorage, defaultPlanLimits.maxMediaFileSize,
      ]);
      switch (outcome?.outcome) {
        case 'committed':
          break;
        case 'over_quota':
          throw teamStorageFull({ bytes: file.size });
        case 'too_large':
          throw fileAboveSizeLimit(Number(outcome.max_file), { bytes: file.size });
        default:
          throw notFound('team', file.teamId);
      }
      // After the team row: the lock order of every upload commit (team, then what the file belongs to).
      const attach = await this.lockAttached(em, kind, file.teamId, file.attachId);
      const [uploader] = await em.execute<{ id: string | null }[]>(
        `select coalesce(?::uuid, (select id from team_member where team_id = ? and is_team_owner order by joined_team_at limit 1)) as id`,
        [file.uploaderMemberId, file.teamId],
      );
      const now = new Date();
      await em.execute(
        `insert into ${kind.table} (id, team_id, upload_team_member_id, ${kind.attachColumn}, file_name, storage_key, storage_location, size, content_type, hash, created_at, updated_at)
         values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [file.fileId, file.teamId, uploader?.id ?? null, file.attachId, file.fileName, file.storageKey, this.deps.store.location, file.size, file.contentType, file.hash, now, now],
      );
      recordTeamLog(em, {
        teamId: file.teamId, action: kind.uploaded, teamMemberId: file.uploaderMemberId,
        targetTeamMemberId: kind.attachColumn === 'target_team_member_id' ? file.attachId : (attach?.assignee ?? null),
        targetIdentifier: file.fileId,
        data: { fileName: file.fileName, size: file.size, ...(kind.attachColumn === 'todo_id' ? { todoId: file.attachId } : {}) },
      });
      await em.flush();
      return { id: file.fileId, path: file.fileName, usedTeamStorage: Number(outcome.used_storage) };
    });
  }

  /** 404 unless what a new file is for exists: a current member of the team, or a to-do of the team. Before the body; the commit checks again, the to-do under a lock. */
  async checkAttached(kind: FileKind, teamId: string, attachId: string | null): Promise<void> {
    await this.lockAttached(this.deps.orm.em.fork(), kind, teamId, attachId);
  }

  private async lockAttached(em: EntityManager, kind: FileKind, teamId: string, attachId: string | null): Promise<{ assignee: string | null } | null> {
    if (attachId === null) return null;
    if (kind.attachColumn === 'target_team_member_id') {
      const rows = isUuid(attachId) ? await em.execute('select id from team_member where id = ? and team_id = ? and left_team_at is null', [attachId, teamId]) : [];
      if (rows.length === 0) throw notFound('team member', attachId);
      return { assignee: attachId };
    }
    const rows = isUuid(attachId)
      ? await em.execute<{ assignee: string | null }[]>('select assignee_team_member_id as assignee from todo where id = ? and team_id = ? for key share', [attachId, teamId])
      : [];
    if (rows.length === 0) throw notFound('to-do', attachId);
    return rows[0]!;
  }

  /** `{data, count, usedTeamStorage}`, newest first, paged. */
  async list(kind: FileKind, teamId: string, visibility: FileVisibility, filters: AttachedFileFilters, paging: Paging) {
    const where = ['team_id = ?'];
    const params: unknown[] = [teamId];
    const add = (condition: string, value: string | undefined) => {
      if (value === undefined) return;
      where.push(condition);
      params.push(value);
    };
    add('upload_team_member_id = ?', filters.uploadTeamMemberId);
    add('target_team_member_id = ?', filters.targetTeamMemberId);
    add('todo_id = ?', filters.todoId);
    if (!visibility.all) {
      if (kind.attachColumn === 'target_team_member_id') {
        where.push('(upload_team_member_id = ? or target_team_member_id = ?)');
        params.push(visibility.memberId, visibility.memberId);
      } else {
        where.push('upload_team_member_id = ?');
        params.push(visibility.memberId);
      }
    }
    const em = this.deps.orm.em.fork();
    const offset = (paging.pageNumber - 1) * paging.pageSize;
    const [rows, counted, team] = await Promise.all([
      em.execute<FileRow[]>(`select ${columns(kind)} from ${kind.table} where ${where.join(' and ')} order by created_at desc, id desc limit ${paging.pageSize} offset ${offset}`, params),
      em.execute<{ count: string | number }[]>(`select count(*) as count from ${kind.table} where ${where.join(' and ')}`, params),
      em.execute<{ used_storage: string | number }[]>('select used_storage from team where id = ?', [teamId]),
    ]);
    return { data: rows.map((row) => this.view(kind, row)), count: Number(counted[0]?.count ?? 0), usedTeamStorage: Number(team[0]?.used_storage ?? 0) };
  }

  async get(kind: FileKind, teamId: string, fileId: string, visibility: FileVisibility, attachId?: string) {
    const row = await this.find(this.deps.orm.em.fork(), kind, teamId, fileId, visibility, attachId);
    return this.view(kind, row);
  }

  /** The stored object of a file for the signed content route; null when there is no such file. */
  async content(kind: FileKind, teamId: string, fileId: string): Promise<{ storageKey: string; size: number; contentType: string; fileName: string; hash: string } | null> {
    if (!isUuid(teamId) || !isUuid(fileId)) return null;
    const [row] = await this.deps.orm.em.fork().execute<FileRow[]>(`select ${columns(kind)} from ${kind.table} where id = ? and team_id = ?`, [fileId, teamId]);
    return row ? { storageKey: row.storage_key, size: Number(row.size), contentType: row.content_type, fileName: row.file_name, hash: row.hash } : null;
  }

  /** Streams a file's stored bytes (the signed content route). */
  read(storageKey: string) {
    return this.deps.store.read(storageKey);
  }

  /**
   * Deletes one file the caller may delete (`visibility.all`, or a file it
   * uploaded), frees its bytes and logs it, in one transaction; then removes
   * its object. Answers the id and the team's used storage after it.
   */
  async delete(kind: FileKind, teamId: string, fileId: string, visibility: FileVisibility, actor: Actor, attachId?: string) {
    const { usedTeamStorage, deleted } = await this.deps.orm.em.fork().transactional(async (em) => {
      const row = await this.find(em, kind, teamId, fileId, visibility, attachId, true);
      // Seeing a file it is the target of does not let a member delete it.
      if (!visibility.all && row.upload_team_member_id !== visibility.memberId) throw notFound(kind.label, fileId);
      const deleted = await this.deleteRows(em, kind, teamId, `id = ?`, [row.id], actor);
      return { deleted, usedTeamStorage: await this.free(em, teamId, deleted) };
    });
    await this.removeObjects(teamId, deleted);
    return { deleted: fileId, usedTeamStorage };
  }

  /**
   * Inside a caller's transaction: deletes the files of `kind` matching
   * `condition` (and the team), logging each; the caller frees their bytes
   * (free) and removes their objects after its commit (removeObjects).
   */
  async deleteRows(em: EntityManager, kind: FileKind, teamId: string, condition: string, params: unknown[], actor: Actor): Promise<DeletedFile[]> {
    const rows = await em.execute<FileRow[]>(`delete from ${kind.table} where team_id = ? and ${condition} returning ${columns(kind)}`, [teamId, ...params]);
    for (const row of rows) {
      recordTeamLog(em, {
        teamId, action: kind.deleted, teamMemberId: actor.teamMemberId,
        targetTeamMemberId: kind.attachColumn === 'target_team_member_id' ? row.attach_id : null,
        targetIdentifier: row.id,
        data: { fileName: row.file_name, size: Number(row.size), ...(kind.attachColumn === 'todo_id' ? { todoId: row.attach_id } : {}) },
      });
    }
    await em.flush();
    return rows.map((row) => ({ id: row.id, storageKey: row.storage_key, size: Number(row.size) }));
  }

  /** Gives the deleted files' bytes back, in the caller's transaction; answers the team's used storage after it. */
  async free(em: EntityManager, teamId: string, deleted: DeletedFile[]): Promise<number> {
    const freed = deleted.reduce((sum, file) => sum + file.size, 0);
    // The same conditional update as StorageQuota.free, answering the new total.
    const rows = await em.execute<{ used_storage: string | number }[]>('update team set used_storage = greatest(used_storage - ?, 0) where id = ? returning used_storage', [freed, teamId]);
    return Number(rows[0]?.used_storage ?? 0);
  }

  /** After the rows are gone: removes the objects; a failure leaves an orphan object for the log, never a row without bytes. */
  async removeObjects(teamId: string, deleted: DeletedFile[]): Promise<void> {
    const byKey = new Map(deleted.map((file) => [file.storageKey, file]));
    // While a backup runs, the objects are queued for the drain instead (backup-guard.ts).
    await removeDeletedObjects(this.deps.orm, [...byKey.keys()], 'FILE_DELETE', async (key) => {
      try {
        await this.deps.store.remove(key);
      } catch (error) {
        this.deps.logger.error({ err: error, teamId, fileId: byKey.get(key)!.id, storageKey: key }, 'file object removal failed');
      }
    });
  }

  private async find(em: EntityManager, kind: FileKind, teamId: string, fileId: string, visibility: FileVisibility, attachId?: string, lock = false): Promise<FileRow> {
    const params: unknown[] = [fileId, teamId];
    let where = 'id = ? and team_id = ?';
    if (attachId !== undefined) {
      where += ` and ${kind.attachColumn} = ?`;
      params.push(isUuid(attachId) ? attachId : null);
    }
    const [row] = isUuid(fileId) ? await em.execute<FileRow[]>(`select ${columns(kind)} from ${kind.table} where ${where}${lock ? ' for update' : ''}`, params) : [];
    // A file the caller may not see is not found: its existence is not confirmed.
    if (!row || !this.visible(kind, row, visibility)) throw notFound(kind.label, fileId);
    return row;
  }

  private visible(kind: FileKind, row: FileRow, visibility: FileVisibility): boolean {
    if (visibility.all) return true;
    const member = visibility.memberId;
    return member !== null && (row.upload_team_member_id === member || (kind.attachColumn === 'target_team_member_id' && row.attach_id === member));
  }

  private view(kind: FileKind, row: FileRow) {
    const path = contentPath(kind, row.team_id, row.id);
    const signature = this.deps.links.sign(path);
    const expires = Number(new URLSearchParams(signature.slice(1)).get('expires'));
    return {
      id: row.id,
      teamId: row.team_id,
      uploadTeamMemberId: row.upload_team_member_id,
      [kind.attachField]: row.attach_id,
      path: row.file_name,
      size: Number(row.size),
      hash: row.hash,
      previewUrl: `${this.deps.publicUrl.replace(/\/+$/, '')}/${path}${signature}`,
      previewUrlExpiresAt: new Date(expires * 1000).toISOString(),
      createdAt: new Date(row.created_at).toISOString(),
      updatedAt: new Date(row.updated_at).toISOString(),
    };
  }
}
