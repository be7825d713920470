import { isDatabaseLocation } from '../../storage/storage-location.ts';
import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { z } from 'zod';
import { Permission, type PermissionName } from '../../auth/permissions.ts';
import { badRequest, forbidden, notFound, unsupportedMediaType } from '../../errors/errors.ts';
import { checkNameAndType } from '../file-types.ts';
import type { ObjectStore } from '../../storage/object-store.ts';
import { parseFileName } from '../file-names.ts';
import { MAX_TAGS, parseTags } from '../tags.ts';
import { findFolder } from '../folders/folder-resolver.ts';
import { isUuid, parseInput, uuid } from '../validation.ts';
import { mediaCacheTag } from './cache-tags.ts';
import { combinedPurge, NOTHING_TO_PURGE, type CdnPurge, type CdnPurger } from './cdn-purge.ts';
import { MediaFile } from './media-file.entity.ts';
import { removeDeletedObjects } from '../storage-removals/backup-guard.ts';
import { mediaPath, publicMediaUrl } from './media-links.ts';
import { thumbnailPath, thumbnailStorageKey } from './thumbnail-links.ts';
import type { MediaService } from './media.service.ts';

/**
 * Spec 4.6-4.8: changing and deleting media files.
 *
 * - update: every field optional; `{}` answers the record unchanged (200,
 *   updatedAt untouched). Unknown fields, a null fileName/public/tags, or a
 *   malformed folderId are 400; a folderId that is not the team's folder is 404.
 *   A fileName whose extension uploads refuse (checkNameAndType) is 415, and
 *   nothing changes.
 * - delete: the row and its size leave the database in one transaction
 *   (team.used_storage keeps equal to the sum of the team's media sizes); the
 *   storage object is removed after the commit. If that removal fails the
 *   failure is logged (`media object removal failed`, with the storage key) and
 *   the object is left for the orphan sweeper: nothing serves it any more, as
 *   file serving reads the row. Then the CDN purge hook is told the file's link.
 * - Files that stop being public (update, bulk setPublic false) or whose link
 *   changes (a rename to another extension) have their old link purged too.
 * - A file of another team is indistinguishable from a missing one.
 */

export const MAX_BULK_IDS = 100;
const NOT_FOUND_MESSAGE = 'Could not find media file';
const TAG_OVERFLOW_MESSAGE = `A file has at most ${MAX_TAGS} tags`;

export const updateSchema = z.strictObject({
  fileName: z.unknown().optional(),
  public: z.boolean({ message: 'must be true or false' }).optional(),
  folderId: uuid.nullable().optional(),
  tags: z.unknown().optional(),
});

const ids = z
  .array(uuid, { message: 'must be an array of media ids' })
  .min(1, 'must hold at least one id')
  .max(MAX_BULK_IDS, `must hold at most ${MAX_BULK_IDS} ids`);
const bulkTags = z.array(z.unknown(), { message: 'must be an array of tags' }).min(1, 'must hold at least one tag');

export const bulkSchema = z.discriminatedUnion(
  'action',
  [
    z.strictObject({ action: z.literal('delete'), ids }),
    z.strictObject({ action: z.literal('move'), ids, folderId: uuid.nullable() }),
    z.strictObject({ action: z.literal('setPublic'), ids, public: z.boolean({ message: 'must be true or false' }) }),
    z.strictObject({ action: z.literal('addTags'), ids, tags: bulkTags }),
    z.strictObject({ action: z.literal('removeTags'), ids, tags: bulkTags }),
  ],
  { message: 'action must be one of delete, move, setPublic, addTags, removeTags' },
);

export type BulkAction = z.output<typeof bulkSchema>['action'];

export const BULK_PERMISSIONS: Record<BulkAction, PermissionName> = {
  delete: Permission.mediaDelete,
  move: Permission.mediaEdit,
  setPublic: Permission.mediaEdit,
  addTags: Permission.mediaEdit,
  removeTags: Permission.mediaEdit,
};

export interface BulkFailure {
  id: string;
  message: string;
}

export interface BulkResult {
  affected: number;
  failed: BulkFailure[];
}

export interface MediaDeletion {
  deleted: string;
  /** The team's used storage after the delete, in bytes. */
  usedTeamStorage: number;
}

interface DeletedRow {
  id: string;
  storage_key: string;
  storage_location: string | null;
  size: string | number;
  file_name: string;
  thumbnail_status: string | null;
  /** The keys of its cached resized images (media_transform), read before the delete cascaded them away. */
  transform_keys?: string[];
}

interface LockedRow {
  id: string;
  file_name: string;
  is_public: boolean;
  thumbnail_status: string | null;
}

export interface MediaEditServiceOptions {
  orm: MikroORM;
  store: ObjectStore;
  media: MediaService;
  purger: CdnPurger;
  /** Base of public links (CDN_URL, or the service's own address): what the purge hook is told. */
  linkBaseUrl: string;
  logger: Pick<Logger, 'warn' | 'error'>;
}

/** The action's permission; 403 when the caller lacks it. Throws 400 for an unknown action. */
export function bulkPermission(input: unknown): PermissionName {
  const action = input !== null && typeof input === 'object' ? (input as { action?: unknown }).action : undefined;
  if (typeof action !== 'string' || !Object.hasOwn(BULK_PERMISSIONS, action)) {
    throw badRequest('action must be one of delete, move, setPublic, addTags, removeTags', 'action');
  }
  return BULK_PERMISSIONS[action as BulkAction];
}

function parseBody(input: unknown): void {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) throw badRequest('The request body must be a JSON object.');
}

export class MediaEditService {
  private readonly orm: MikroORM;
  private readonly store: ObjectStore;
  private readonly media: MediaService;
  private readonly purger: CdnPurger;
  private readonly linkBaseUrl: string;
  private readonly logger: Pick<Logger, 'warn' | 'error'>;

  constructor(options: MediaEditServiceOptions) {
    this.orm = options.orm;
    this.store = options.store;
    this.media = options.media;
    this.purger = options.purger;
    this.linkBaseUrl = options.linkBaseUrl;
    this.logger = options.logger;
  }

  private link(teamId: string, mediaId: string, fileName: string): string {
    return publicMediaUrl(this.linkBaseUrl, mediaPath(teamId, mediaId, fileName));
  }

  /**
   * What a CDN may hold of a file that stops being public under `fileName`: its link, its
   * thumbnail's if one was served, and its cache tag, which covers its resized images too.
   */
  private published(teamId: string, mediaId: string, fileName: string, thumbnailStatus: string | null): CdnPurge {
    const link = this.link(teamId, mediaId, fileName);
    const urls = thumbnailStatus === 'ready' ? [link, publicMediaUrl(this.linkBaseUrl, thumbnailPath(teamId, mediaId))] : [link];
    return { urls, tags: [mediaCacheTag(mediaId)] };
  }

  /** Spec 4.6. Answers the updated record (MediaService.view). */
  async update(teamId: string, mediaId: string, input: unknown) {
    parseBody(input);
    const data = parseInput(updateSchema, input);
    if (data.tags !== undefined && !Array.isArray(data.tags)) throw badRequest('tags must be a list of strings', 'tags');
    const fileName = data.fileName === undefined ? undefined : parseFileName(data.fileName);
    // The same name policy as an upload: a stored file is never renamed to a blocked type.
    const blocked = fileName === undefined ? null : checkNameAndType(fileName, null);
    if (blocked) throw unsupportedMediaType(`Blocked file type: ${blocked}`, blocked);
    const tags = data.tags === undefined ? undefined : parseTags(data.tags);
    if (!isUuid(mediaId)) throw notFound('media file', mediaId);

    const { view, stale } = await this.orm.em.fork().transactional(async (em) => {
      const file = await em.findOne(MediaFile, { id: mediaId, team: teamId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if (!file) throw notFound('media file', mediaId);
      const oldFileName = file.fileName;
      const oldLink = this.link(teamId, file.id, oldFileName);
      const wasPublic = file.isPublic;
      if (data.folderId !== undefined) {
        const folder = data.folderId === null ? null : await findFolder(em, teamId, data.folderId);
        em.assign(file, { folder: folder?.id ?? null });
      }
      if (fileName !== undefined) file.fileName = fileName;
      if (data.public !== undefined) file.isPublic = data.public;
      if (tags !== undefined) file.tags = tags;
      await em.flush();
      const newLink = this.link(teamId, file.id, file.fileName);
      const stale = wasPublic && !file.isPublic ? this.published(teamId, file.id, oldFileName, file.thumbnailStatus ?? null)
        : wasPublic && newLink !== oldLink ? { urls: [oldLink], tags: [mediaCacheTag(file.id)] } : NOTHING_TO_PURGE;
      return { view: this.media.view(file), stale };
    });
    await this.purger.purge(stale);
    return view;
  }

  /** Spec 4.7. */
  async delete(teamId: string, mediaId: string): Promise<MediaDeletion> {
    if (!isUuid(mediaId)) throw notFound('media file', mediaId);
    const { deleted, usedTeamStorage } = await this.deleteRows(teamId, [mediaId]);
    if (deleted.length === 0) throw notFound('media file', mediaId);
    await this.afterDelete(teamId, deleted);
    return { deleted: mediaId, usedTeamStorage };
  }

  /**
   * Deletes the team's files among `mediaIds` in one transaction, freeing their
   * sizes, then removes their objects and purges their links. Ids that are not
   * the team's files are ignored; answers the ids deleted.
   */
  async deleteMany(teamId: string, mediaIds: string[]): Promise<string[]> {
    const { deleted } = await this.deleteRows(teamId, mediaIds);
    await this.afterDelete(teamId, deleted);
    return deleted.map((row) => row.id);
  }

  private async deleteRows(teamId: string, mediaIds: string[]): Promise<{ deleted: DeletedRow[]; usedTeamStorage: number }> {
    const wanted = mediaIds.filter(isUuid);
    return this.orm.em.fork().transactional(async (em) => {
      const transforms = wanted.length === 0 ? [] : await this.lockWithTransforms(em, teamId, wanted);
      const deleted =
        wanted.length === 0
          ? []
          : await em.execute<DeletedRow[]>('delete from media_file where team_id = ? and id in (?) returning id, storage_key, storage_location, size, file_name, thumbnail_status', [teamId, wanted]);
      for (const row of deleted) row.transform_keys = transforms.filter((transform) => transform.media_id === row.id).map((transform) => transform.storage_key);
      const freed = deleted.reduce((sum, row) => sum + Number(row.size), 0);
      // The same conditional update as StorageQuota.free, answering the new total.
      const rows = await em.execute<{ used_storage: string | number }[]>(
        'update team set used_storage = greatest(used_storage - ?, 0) where id = ? returning used_storage',
        [freed, teamId],
      );
      return { deleted, usedTeamStorage: Number(rows[0]?.used_storage ?? 0) };
    });
  }

  /**
   * Locks the files and answers the keys of their cached resized images, which their delete
   * cascades away. Locked first: a resized image recorded meanwhile (its insert checks the file's
   * row) waits for the delete and then fails, so none is missed (transform-cache.ts).
   */
  private async lockWithTransforms(em: EntityManager, teamId: string, ids: string[]): Promise<{ media_id: string; storage_key: string }[]> {
    const locked = await em.execute<{ id: string }[]>('select id from media_file where team_id = ? and id in (?) order by id for update', [teamId, ids]);
    if (locked.length === 0) return [];
    return em.execute('select media_id, storage_key from media_transform where media_id in (?)', [locked.map((row) => row.id)]);
  }

  private async afterDelete(teamId: string, deleted: DeletedRow[]): Promise<void> {
    if (deleted.length === 0) return;
    // A small file kept in the database went with its row.
    const byKey = new Map(deleted.filter((row) => !isDatabaseLocation(row.storage_location)).map((row) => [row.storage_key, row]));
    // A thumbnail being made now is removed by its thumbnailer, which finds the row gone (thumbnailer.ts).
    for (const row of deleted) if (row.thumbnail_status === 'ready') byKey.set(thumbnailStorageKey(teamId, row.id), row);
    // Its resized images too; one being made now is removed by its transformer, which finds the row gone (image-transformer.ts).
    for (const row of deleted) for (const key of row.transform_keys ?? []) byKey.set(key, row);
    // While a backup runs, the objects are queued for the drain instead (backup-guard.ts).
    await removeDeletedObjects(this.orm, [...byKey.keys()], 'MEDIA_DELETE', async (key) => {
      try {
        await this.store.remove(key);
      } catch (error) {
        // The row is gone, so nothing serves the object; the orphan sweeper removes it later.
        this.logger.error({ err: error, teamId, mediaId: byKey.get(key)!.id, storageKey: key }, 'media object removal failed');
      }
    });
    await this.purger.purge(combinedPurge(deleted.map((row) => this.published(teamId, row.id, row.file_name, row.thumbnail_status))));
  }

  /**
   * Spec 4.8. The caller has checked the action's permission (see
   * bulkPermission); `permissions` is checked again here so the service is
   * safe on its own.
   */
  async bulk(teamId: string, permissions: ReadonlySet<string>, input: unknown): Promise<BulkResult> {
    parseBody(input);
    const required = bulkPermission(input);
    if (!permissions.has(required)) throw forbidden(`Missing permission ${required}`, required);
    const data = parseInput(bulkSchema, input);
    const wanted = [...new Set(data.ids.map((id) => id.toLowerCase()))];
    const failed: BulkFailure[] = [];
    const notFoundOf = (processed: Set<string>) => {
      for (const id of wanted) if (!processed.has(id)) failed.push({ id, message: NOT_FOUND_MESSAGE });
    };

    if (data.action === 'delete') {
      const deleted = new Set(await this.deleteMany(teamId, wanted));
      notFoundOf(deleted);
      return { affected: deleted.size, failed };
    }

    const tags = data.action === 'addTags' || data.action === 'removeTags' ? parseTags(data.tags) : [];
    const stale: CdnPurge[] = [];
    const affected = await this.orm.em.fork().transactional(async (em) => {
      const folder = data.action === 'move' && data.folderId !== null ? await findFolder(em, teamId, data.folderId) : null;
      const locked = await em.execute<LockedRow[]>(
        'select id, file_name, is_public, thumbnail_status from media_file where team_id = ? and id in (?) order by id for update',
        [teamId, wanted],
      );
      notFoundOf(new Set(locked.map((row) => row.id)));
      const found = locked.map((row) => row.id);
      if (found.length === 0) return 0;
      switch (data.action) {
        case 'move':
          await em.execute('update media_file set folder_id = ?, updated_at = now() where team_id = ? and id in (?)', [folder?.id ?? null, teamId, found]);
          return found.length;
        case 'setPublic':
          await em.execute('update media_file set is_public = ?, updated_at = now() where team_id = ? and id in (?)', [data.public, teamId, found]);
          if (!data.public) for (const row of locked) if (row.is_public) stale.push(this.published(teamId, row.id, row.file_name, row.thumbnail_status));
          return found.length;
        case 'addTags':
          return this.addTags(em, teamId, found, tags, failed);
        case 'removeTags':
          await em.execute(
            `update media_file f
                set tags = array(select u.t from unnest(f.tags) with ordinality u(t, n) where u.t <> all(array[?]::text[]) order by u.n),
                    updated_at = now()
              where f.team_id = ? and f.id in (?)`,
            [tags, teamId, found],
          );
          return found.length;
      }
    });
    await this.purger.purge(combinedPurge(stale));
    return { affected, failed };
  }

  /** Adds the tags (existing ones keep their place, new ones follow in order); a file that would pass MAX_TAGS is left as it is and listed in `failed`. */
  private async addTags(em: EntityManager, teamId: string, found: string[], tags: string[], failed: BulkFailure[]): Promise<number> {
    const merged = `array(select u.t from unnest(f.tags || array[?]::text[]) with ordinality u(t, n) group by u.t order by min(u.n))`;
    const updated = await em.execute<{ id: string }[]>(
      `update media_file f set tags = ${merged}, updated_at = now()
        where f.team_id = ? and f.id in (?) and cardinality(${merged}) <= ?
        returning f.id`,
      [tags, teamId, found, tags, MAX_TAGS],
    );
    const done = new Set(updated.map((row) => row.id));
    for (const id of found) if (!done.has(id)) failed.push({ id, message: TAG_OVERFLOW_MESSAGE });
    return done.size;
  }
}
